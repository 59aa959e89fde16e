"""python -m dlbridge: placeholder replaced below."""
