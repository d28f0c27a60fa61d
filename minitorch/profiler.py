"""`torch.profiler`'s names for minitorch's profiler (minitorch/autograd/profiler.py).

    from minitorch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        model(x)
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))

`ProfilerActivity` is torch's own enum; minitorch records CPU times whatever is asked for.
"""

from torch.profiler import ProfilerActivity

from minitorch.autograd.profiler import profile, record_function

__all__ = ["ProfilerActivity", "profile", "record_function"]
