"""blurbflow: reproducible BLURB benchmarking."""

__version__ = "0.1.0"
