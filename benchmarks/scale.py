"""Scenario (opt-in, not part of ``python -m benchmarks``): does the whole ``training``
pipeline stay linear in time and flat in memory as the table grows?

A table of N rows x 32 floats and a 10-class label is generated (not committed) for the
small and the large size, and ``tfkfp run training`` runs on each as a user types it, the
same settings for both. Reported: the wall time of each run and, per step, the peak
resident memory of the step's process tree, sampled from /proc. Targets: the large run's
wall time at most 11x the small one's for 10x the rows, and each step's peak memory at
most 1.2x its peak on the small table.

``python -m benchmarks.scale [--rows 10000000] [--small 1000000] [--work DIR] [--smoke]``
(about 6 minutes on 2 cores at the default sizes, the tables' generation included; the
CSVs need about 2 GB. ``--smoke``: 1,000 and 2,000 rows, one epoch, about a minute).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, List, Tuple

import numpy as np

from benchmarks.harness import SMOKE_HELP, Record, exit_status, load_average, print_records

COLUMNS = 32
CHUNK_ROWS = 500_000
SAMPLE_SECONDS = 0.2
# float TFLite: the scaling of the pipeline is measured here, not a quantization's gate
SETTINGS = {"label": "label", "epochs": 2, "batch_size": 256, "quantization": "none"}
SMOKE = {"rows": 2_000, "small": 1_000, "epochs": 1}
TASK = re.compile(rb"--function_to_execute\x00(\w+)")  # the component a task process runs


def write_table(path: str, rows: int, seed: int = 0) -> str:
    """N rows of 32 normal floats and a label, written in chunks (pyarrow's CSV writer)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    if os.path.exists(path):
        return path
    rng = np.random.default_rng(seed)
    names = [f"f{i:02d}" for i in range(COLUMNS)] + ["label"]
    with pacsv.CSVWriter(path + ".tmp", pa.schema(
            [(n, pa.float32()) for n in names[:-1]] + [("label", pa.int64())])) as writer:
        for start in range(0, rows, CHUNK_ROWS):
            n = min(CHUNK_ROWS, rows - start)
            values = rng.normal(size=(n, COLUMNS)).astype(np.float32)
            labels = np.argmax(values[:, :10], axis=1).astype(np.int64)  # learnable
            writer.write_table(pa.table([*values.T, labels], names=names))
    os.replace(path + ".tmp", path)
    return path


class MemorySampler:
    """Peak resident memory per component, summed over each task's process tree."""

    def __init__(self, root_pid: int):
        self.root_pid = root_pid
        self.peaks: Dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            for task, rss in _task_memory(self.root_pid).items():
                self.peaks[task] = max(self.peaks.get(task, 0), rss)


def _task_memory(root_pid: int) -> Dict[str, int]:
    """Resident bytes per component now: each process under root_pid is counted for the
    nearest ancestor (or itself) that runs a component."""
    parents, rss, names = {}, {}, {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                match = TASK.search(f.read())
        except OSError:
            continue
        parents[int(pid)] = int(fields[1])
        rss[int(pid)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        if match:
            names[int(pid)] = match.group(1).decode()
    totals: Dict[str, int] = {}
    for pid in rss:
        task, up, under_root = None, pid, False
        while up in parents and up != 0:
            task = task or names.get(up)
            if up == root_pid:
                under_root = True
                break
            up = parents[up]
        if under_root and task:
            totals[task] = totals.get(task, 0) + rss[pid]
    return totals


def run_training(csv_path: str, root: str, epochs: int = SETTINGS["epochs"]
                 ) -> Tuple[float, Dict[str, int]]:
    """Wall seconds of ``tfkfp run training`` and each step's peak memory."""
    sets = [a for k, v in {"input_uri": csv_path, **SETTINGS, "epochs": epochs}.items()
            for a in ("--set", f"{k}={v}")]
    command = [sys.executable, "-m", "tfkfp.cli.main", "run", "training",
               "--pipeline-root", root, *sets]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with MemorySampler(process.pid) as sampler:
        _, err = process.communicate()
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"tfkfp run training failed:\n{err.decode()[-3000:]}")
    return seconds, sampler.peaks


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale")
    parser.add_argument("--rows", type=int, default=10_000_000, help="the large table's rows")
    parser.add_argument("--small", type=int, default=1_000_000, help="the small table's rows")
    parser.add_argument("--work", help="folder for the tables and runs (default: temporary)")
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args(argv)
    if args.smoke:
        args.rows, args.small = SMOKE["rows"], SMOKE["small"]
    epochs = SMOKE["epochs"] if args.smoke else SETTINGS["epochs"]
    print(f"{os.cpu_count()} cores; load average {load_average()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="tfkfp-scale-") as scratch:
        work = args.work or scratch
        os.makedirs(work, exist_ok=True)
        runs = {}
        for rows in (args.small, args.rows):
            csv_path = write_table(os.path.join(work, f"table-{rows}.csv"), rows)
            runs[rows] = run_training(csv_path, os.path.join(work, f"root-{rows}"), epochs)
            seconds, peaks = runs[rows]
            print(f"{rows:,} rows: {seconds:,.0f} s; peak memory per step (MB): "
                  + ", ".join(f"{k} {v / 2**20:,.0f}" for k, v in sorted(peaks.items())),
                  flush=True)
    (small_s, small_peaks), (large_s, large_peaks) = runs[args.small], runs[args.rows]
    factor = args.rows / args.small
    load = load_average()
    # Both as "higher is better" ratios the table judges: met when the large run takes at
    # most 1.1x the rows' factor in time, and each step at most 1.2x its small-run memory.
    records = [Record("scale: training", "runs/hour", 3600 / large_s,
                      f"{1.1 * factor:g}x the {args.small:,}-row run's time",
                      3600 / (1.1 * factor * small_s), 1.0, load)]
    for task in sorted(large_peaks):
        if task in small_peaks:
            records.append(Record(f"scale: {task}", "1.2x small peak, MB",
                                  1.2 * small_peaks[task] / 2**20,
                                  f"peak at {args.rows:,} rows, MB",
                                  large_peaks[task] / 2**20, 1.0, load))
    print_records(records)
    return exit_status(records, args.smoke)


if __name__ == "__main__":
    raise SystemExit(main())
