"""The diagnosis for the KFP UI: verdict, a bar chart of the three throughputs as inline SVG,
the figures, and the ranked remedies."""

from typing import Any, Dict, List, Sequence, Tuple

from tfkfp.components.common.charts.page import Section
from tfkfp.components.common.platform.charts import data_uri

WIDTH, BAR, GAP, LABEL = 520, 22, 10, 170
MB = 1 << 20
BARS = (("input pipeline alone", "input_records_per_second", "#1f77b4"),
        ("training step alone", "compute_records_per_second", "#d62728"),
        ("both together", "combined_records_per_second", "#2ca02c"))


def markdown(verdict: str, summary: str, remedies: Sequence[str], f: Dict[str, Any]) -> str:
    lines = ["# Bottleneck diagnosis", "", f"**{verdict}**: {summary}.", ""]
    if f.get("compute_records_per_second"):
        lines += ["## Throughput", "", f"![records per second]({data_uri(svg(f))})", ""]
    lines += ["## Remedies, most effective first", ""]
    lines += [f"{i}. {text}" for i, text in enumerate(remedies, 1)]
    lines += ["", "## Figures", "", "| | |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in rows(f)]
    return "\n".join(lines) + "\n"


def rows(f: Dict[str, Any]) -> List[Tuple[str, str]]:
    out = [("model", f"{f['model']} ({f['parameters']:,} parameters)"),
           ("strategy, replicas", f"{f['strategy']}, {f['replicas']}"),
           ("batch size per replica / global", f"{f['batch_size']} / {f['global_batch_size']}"),
           ("precision, cache", f"{f['precision']}, {f['cache']}"
            + (" (filled before timing)" if f.get("cache_filled") else "")),
           ("shards", f"{f['num_shards']} ({f['compression']}), {f['shards_mb']:,.2f} MB"),
           ("read alone, no parsing" + (" (cold)" if f["read_cold"] else ""),
            f"{f['read_records_per_second']:,.0f} records/s, {f['read_mb_per_second']:,.2f} MB/s "
            f"of shards ({f['read_records_per_second'] * f['record_bytes'] / MB:,.2f} MB/s of "
            "records)"),
           ("input pipeline with parsing", f"{f['input_records_per_second']:,.0f} records/s, "
            f"{f['input_mb_per_second']:,.2f} MB/s")]
    if f.get("compute_records_per_second"):
        out += [("training step on held batches",
                 f"{f['compute_records_per_second']:,.0f} records/s ({f['step_ms']:.2f} ms)"),
                ("step fed by the pipeline", f"{f['combined_records_per_second']:,.0f} records/s"),
                ("step time waiting for input", f"{f['input_wait_fraction']:.0%}")]
    if f.get("larger_batch_records_per_second"):
        out.append((f"step at batch_size={f['larger_batch_size']}",
                    f"{f['larger_batch_records_per_second']:,.0f} records/s"))
    out += [("parameters + gradients + slots", _mb(f["parameter_mb"])),
            ("activations (forward + backward)" + ("" if f["activations_known"] else
                                                   ", unknown for this model"),
             _mb(f["activation_mb"])),
            ("step memory need", _mb(f["step_memory_mb"])),
            ("memory budget", f"{f['memory_budget_mb']:,.0f} MB ({f['memory_budget_source']})"),
            ("host memory total / available", f"{f['host_total_mb']:,.0f} / "
             f"{f['host_available_mb']:,.0f} MB"),
            ("process peak resident memory", f"{f['peak_rss_mb']:,.0f} MB")]
    if f.get("device_peak_mb"):
        out.append(("device peak memory", f"{f['device_peak_mb']:,.0f} MB"))
    return out


def _mb(value: float) -> str:
    return f"{value:,.1f} MB" if value >= 10 else f"{value:.3g} MB"


def charts(f: Dict[str, Any]) -> List[Section]:
    """The report's chart, for the step's HTML page (none when the step did not run)."""
    return [("Records per second", svg(f))] if f.get("compute_records_per_second") else []


def svg(f: Dict[str, Any]) -> str:
    """Horizontal bars: records/s of the input alone, the step alone and both together."""
    top = max(f.get(key) or 0 for _, key, _ in BARS) or 1.0
    height = len(BARS) * (BAR + GAP) + GAP + 16
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}">',
             f'<rect width="{WIDTH}" height="{height}" fill="white"/>']
    for i, (label, key, colour) in enumerate(BARS):
        value = f.get(key) or 0.0
        y = GAP + i * (BAR + GAP)
        length = (WIDTH - LABEL - 90) * value / top
        parts += [f'<text x="4" y="{y + 15}" font-size="12">{label}</text>',
                  f'<rect x="{LABEL}" y="{y}" width="{length:.1f}" height="{BAR}" '
                  f'fill="{colour}"/>',
                  f'<text x="{LABEL + length + 4:.1f}" y="{y + 15}" font-size="11">'
                  f'{value:,.0f}/s</text>']
    parts.append(f'<text x="4" y="{height - 4}" font-size="10">records per second</text></svg>')
    return "".join(parts)
