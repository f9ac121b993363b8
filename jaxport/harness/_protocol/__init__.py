"""What crosses between the harness's two processes: the requests, the answers, the worker's
command line, and the files both read (the stage marks, a failed entry's artifacts folder, the
release replayer's rows). Free of jax, so that either side imports it."""
