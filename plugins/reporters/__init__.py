"""Built-in reporters: log a finished run to MLflow (``mlflow``, a file store in the run folder by
default) or to Weights & Biases (``wandb``, offline by default). Each imports its tracker's package
only when a run uses it (docs/reporters.md)."""
