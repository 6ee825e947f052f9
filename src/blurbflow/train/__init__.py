"""Fine-tuning cells: encoding, batching, optimisation and the cell loop."""
