"""Side-by-side benchmarks: tfkfp against anchors measured in the same run, as ratios."""
