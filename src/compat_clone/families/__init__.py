"""The cloning implementations, one module per Keras family, over one shared core (`_core`)."""
