"""The ``tfkfp`` command (main) and what it runs on a user's machine: the local runner's
console and task processes (local_run, task_logs, local_tasks, figures), the demo job and
submitting to a Kubeflow Pipelines server. The pipelines it compiles and checks are in
tfkfp.pipelines; the components and the servers it starts are in tfkfp.components."""
