def completion(*a, **k):  # stand-in, never called by evaluation
    raise RuntimeError("no network here")
