"""The Markdown summary of a sharding run, shown in the KFP UI."""


def render(result) -> str:
    lines = [
        "# TFRecord shards",
        "",
        f"{result.total_records:,} records from {result.input_files} input file(s) in "
        f"{result.seconds:.1f}s ({result.records_per_second:,.0f} records/s), "
        f"compression: {result.compression}.",
        "",
        "| split | records | shards | MB |",
        "|---|---:|---:|---:|",
    ]
    for split, shards in result.shards.items():
        lines.append(f"| {split} | {result.records[split]:,} | {len(shards)} | "
                     f"{result.bytes[split] / 1e6:,.2f} |")
    lines += ["", "| column | role | dtype | shape |", "|---|---|---|---|"]
    for col in result.schema.columns:
        shape = list(col.image_shape) if col.image_shape else list(col.shape)
        extra = f" ({len(col.vocabulary)} classes)" if col.vocabulary else ""
        lines.append(f"| {col.name} | {col.role}{extra} | {col.dtype} | {shape} |")
    return "\n".join(lines) + "\n"
