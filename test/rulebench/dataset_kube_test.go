package rulebench

import (
	"fmt"
	"time"
)

// Kubernetes Jobs: each training namespace runs an evaluation CronJob every
// cronEvery, each run taking 8 to 12 minutes; in research every fourth
// run fails (training-job-success burns there). The training jobs
// themselves are Jobs that run throughout.
const (
	cronEvery  = 20 * time.Minute
	runTakes   = 8 * time.Minute
	failEvery  = 4
	failingNS  = "research"
	ksmJobName = "kube-state-metrics"
)

// kubeJob is one Kubernetes Job.
type kubeJob struct {
	name, namespace string
	owner           string // CronJob name; "" for none
	created         time.Time
	finished        time.Time // zero while running
	failed          bool
}

func makeJobs(d *dataset) []kubeJob {
	var out []kubeJob
	train := (d.nodes*4/5 + nodesPerJob - 1) / nodesPerJob
	for j := range train {
		out = append(out, kubeJob{
			name: fmt.Sprintf("llm-pretrain-%d", j), namespace: trainNamespaces[j%len(trainNamespaces)],
			created: d.start.Add(-time.Duration(j+1) * time.Hour),
		})
	}
	for i, ns := range trainNamespaces {
		cron := "eval-" + ns
		for run, at := 0, d.start.Add(time.Duration(i)*time.Minute); at.Before(d.end); run, at = run+1, at.Add(cronEvery) {
			job := kubeJob{name: fmt.Sprintf("%s-%d", cron, at.Unix()/60), namespace: ns, owner: cron, created: at}
			done := at.Add(runTakes + time.Duration(unit(noiseJob, uint64(i), uint64(run))*4*float64(time.Minute)))
			if done.Before(d.end) {
				job.finished = done
				job.failed = ns == failingNS && run%failEvery == failEvery-1
			}
			out = append(out, job)
		}
	}
	return out
}

var ksmTarget = target{offset: 13 * time.Second}

// ksmLabels are a Job's labels as a Prometheus scraping kube-state-metrics
// without honor_labels stores them: the Job's namespace is
// exported_namespace.
func ksmLabels(j kubeJob) []string {
	return []string{"job_name", j.name, "exported_namespace", j.namespace, "namespace", "monitoring",
		"instance", "10.2.0.10:8080", "job", ksmJobName}
}

// since returns the scrapes of ts at or after t.
func since(ts []int64, t time.Time) []int64 {
	for i, ms := range ts {
		if ms >= t.UnixMilli() {
			return ts[i:]
		}
	}
	return nil
}

// writeKube writes kube-state-metrics' Job series: owner, succeeded,
// failed (pods) and the Failed condition once a Job has it.
func (d *dataset) writeKube(o *omWriter) {
	all := d.times(ksmTarget)
	constant := func(v float64) func(int) float64 { return func(int) float64 { return v } }
	o.family("kube_job_owner", "gauge")
	for _, j := range d.jobs {
		kind, name := "CronJob", j.owner
		if j.owner == "" {
			kind, name = "<none>", "<none>"
		}
		o.series("kube_job_owner", with(ksmLabels(j), "owner_kind", kind, "owner_name", name, "owner_is_controller", "true"),
			since(all, j.created), constant(1))
	}
	after := func(ts []int64, t time.Time, before, then float64) func(int) float64 {
		return func(k int) float64 {
			if !t.IsZero() && ts[k] >= t.UnixMilli() {
				return then
			}
			return before
		}
	}
	o.family("kube_job_status_succeeded", "gauge")
	for _, j := range d.jobs {
		ts := since(all, j.created)
		done := j.finished
		if j.failed {
			done = time.Time{}
		}
		o.series("kube_job_status_succeeded", ksmLabels(j), ts, after(ts, done, 0, 1))
	}
	o.family("kube_job_status_failed", "gauge")
	for _, j := range d.jobs {
		ts := since(all, j.created)
		if !j.failed {
			o.series("kube_job_status_failed", ksmLabels(j), ts, constant(0))
			continue
		}
		before := ts[:len(ts)-len(since(ts, j.finished))]
		if len(before) > 0 {
			o.series("kube_job_status_failed", ksmLabels(j), before, constant(0))
		}
		o.series("kube_job_status_failed", with(ksmLabels(j), "reason", "BackoffLimitExceeded"), since(ts, j.finished), constant(1))
	}
	o.family("kube_job_failed", "gauge")
	for _, j := range d.jobs {
		if !j.failed {
			continue
		}
		ts := since(all, j.finished)
		for _, c := range []struct {
			cond string
			v    float64
		}{{"true", 1}, {"false", 0}, {"unknown", 0}} {
			o.series("kube_job_failed", with(ksmLabels(j), "condition", c.cond), ts, func(int) float64 { return c.v })
		}
	}
}
