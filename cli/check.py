"""``tfkfp check``: compiled pipelines against the cluster they will run on (pipelines/lint.py),
a line per problem and exit status 1 when there is any, for a CI job."""

import argparse
import collections
import os
from typing import List, TextIO

from tfkfp.cli import allow_list
from tfkfp.pipelines import lint, overlays


def add_parser(commands) -> None:
    check = commands.add_parser(
        "check", help="lint compiled pipeline YAML against a cluster overlay (for CI)",
        description="Check compiled pipelines (tfkfp compile's YAML) against the cluster they "
        "will run on. Every step's image must be in the overlay's tfkfp-config allow-list, "
        "matched exactly (an image compiled by digest passes only where that digest is "
        "listed). Every step's CPU, memory and local disk must be within its LimitRange and "
        "ResourceQuota. The parameters' defaults and --set values are checked as tfkfp submit "
        "checks them. A line per problem, once with its count where repeated; exit status 1 "
        "when there is any.")
    check.add_argument("pipelines", nargs="+", metavar="PIPELINE.yaml",
                       help="compiled pipelines, e.g. pipelines/*.yaml")
    check.add_argument("--overlay", default="", metavar="RENDERED",
                       help="the cluster: an overlay rendered to YAML (kustomize build "
                       "manifests/overlays/kind > cluster.yaml) or a folder of rendered YAML "
                       "files; without it only the parameters are checked")
    check.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       dest="parameters", help="a parameter value the runs will give "
                       "(repeatable; each pipeline that takes KEY checks it)")
    add_mounted_option(check)
    allow_list.add_parser(commands)


def add_mounted_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mounted", action="append", default=[], metavar="FOLDER",
                        help="a folder every step's pod mounts at the same path (repeatable); "
                        "parameters may name paths under it, not other local paths")


def mounted_folders(folders) -> list:
    return [os.path.abspath(f) for f in folders]


def run_check(args: argparse.Namespace, out: TextIO) -> int:
    """Print each problem, or one OK line; the exit status."""
    cluster = overlays.read_overlay(args.overlay) if args.overlay else None
    problems = lint.check_files(args.pipelines, cluster, args.parameters,
                                mounted_folders(args.mounted))
    for line in collapsed([problem.line() for problem in problems]):
        print(line, file=out)
    if problems:
        print(f"tfkfp check: {len(problems)} problem(s) in {len(args.pipelines)} "
              "pipeline(s)", file=out)
        return 1
    checked = ("images, LimitRange, ResourceQuota and parameters against " + args.overlay
               if args.overlay else "parameters only (no --overlay)")
    print(f"OK: {len(args.pipelines)} pipeline(s), {checked}", file=out)
    return 0


def collapsed(lines: List[str]) -> List[str]:
    """Each distinct line once, in first-seen order, with its count where it came more than
    once (a step name used in two DAGs of one pipeline gives the same line twice)."""
    counts = collections.Counter(lines)
    return [line if counts[line] == 1 else f"{line} (x{counts[line]})"
            for line in dict.fromkeys(lines)]
