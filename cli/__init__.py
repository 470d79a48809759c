"""The ``tfkfp`` command (main) and what it runs on a user's machine: the local runner's
console and task processes (local_run, task_logs, local_tasks, figures, progress_view), the
demo job, a Pub/Sub stream's predictions (stream), checking compiled pipelines against a
cluster (check, allow_list) and submitting to a Kubeflow Pipelines server. The pipelines it
compiles and checks are in tfkfp.pipelines; the components and the servers it starts are in
tfkfp.components."""
