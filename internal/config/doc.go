// Package config owns vigil.yaml: its fields, their defaults, validation with
// errors that name the field and its line, and loading from a file.
//
// It does not start anything; cmd/vigil turns a Config into components.
package config
