// Package certtest makes the certificates and password files of the
// authentication tests at test time: a CA, a server certificate for
// 127.0.0.1 and localhost, a client certificate the CA signs and one
// another CA signs, as PEM files in a test's temporary directory, and
// bcrypt hashes at the lowest cost. It owns nothing of the product.
package certtest
