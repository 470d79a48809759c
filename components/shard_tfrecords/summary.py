"""The Markdown summary of a sharding run, shown in the KFP UI."""

MAX_ROWS = 12  # wide tables list their first columns and the label


def render(result) -> str:
    lines = [
        "# TFRecord shards",
        "",
        f"{result.total_records:,} records from {result.input_files} input file(s) in "
        f"{result.seconds:.1f}s ({result.records_per_second:,.0f} records/s), "
        f"compression: {result.compression}, layout: {_layout(result.schema)}.",
        "",
        "| split | records | shards | MB |",
        "|---|---:|---:|---:|",
    ]
    for split, shards in result.shards.items():
        lines.append(f"| {split} | {result.records[split]:,} | {len(shards)} | "
                     f"{result.bytes[split] / 1e6:,.2f} |")
    lines += [line for w in result.warnings for line in ("", f"**Warning:** {w}.")]
    lines += ["", "| column | role | dtype | shape | missing |", "|---|---|---|---|---:|"]
    columns = result.schema.columns
    shown = columns if len(columns) <= MAX_ROWS else columns[:MAX_ROWS - 2] + columns[-1:]
    for col in shown:
        shape = list(col.image_shape) if col.image_shape else list(col.shape)
        extra = f" ({len(col.vocabulary)} classes)" if col.vocabulary else ""
        lines.append(f"| {col.name} | {col.role}{extra} | {col.dtype} | {shape} | "
                     f"{col.missing:,} |")
        if col is shown[-2] and len(shown) < len(columns):
            lines.append(f"| ... {len(columns) - len(shown)} more | | | | |")
    return "\n".join(lines) + "\n"


def _layout(schema) -> str:
    if schema.record_layout.multi_row:
        return f"{schema.layout} ({schema.block_rows:,} rows per record)"
    return schema.layout
