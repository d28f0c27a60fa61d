"""minitorch.jit: trace a function once, then replay its ops without building a graph per op.

Built on the forward record (minitorch/autograd/record.py, NOTE [Forward record]): a trace is
the recorded program of one call (trace.py); its guards (guards.py) say when it holds for
another call; a replay (replay.py, steps.py) runs it on storage as one op whose backward runs
the ops' backwards in reverse, through each op's storage kernel (NOTE [Storage kernels] in
autograd/function.py); cuda_graph.py captures a replay into CUDA graphs; explain.py reports
what happened.

    traced = minitorch.jit.trace(fn)        # then call traced(...) like fn
    print(minitorch.jit.explain(fn, x))     # traces, guards, breaks, ops, retrace reasons
"""

from minitorch.jit.explain import Explanation
from minitorch.jit.trace import TracedFunction, TracerWarning, explain, trace

__all__ = ["Explanation", "TracedFunction", "TracerWarning", "explain", "trace"]
