"""Model registry support: loading checkpoints safely, layer surgery for recipes, demo model."""
