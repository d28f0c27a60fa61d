"""minitorch.autobatch: run per-sample code (trees, sequences of different lengths, any
per-sample graph) with ops batched across samples automatically, as DyNet does.

    with minitorch.autobatch.batch():            # lazy mode: ops are recorded, not run
        losses = [loss_of(tree) for tree in trees]   # ordinary per-sample code
        loss = minitorch.stack(losses).mean()
    loss.backward()                              # gradients as if each sample ran alone
    print(minitorch.autobatch.stats())           # calls, flushes, what lost batching ...

Built on the forward record's hook (minitorch/autograd/record.py): a `BatchRecorder` is a
`Recorder` that defers ops instead of running them. NOTE [Autobatch] in lazy.py explains the
mechanism; the files, one job each:
- recorder.py: the hooks (which ops wait, which run now, what forces a flush), `batch()`;
- lazy.py: the lazy graph (`LazyOp`, `Pending`) and the placeholders;
- signature.py: what must be equal for ops to batch; output shapes without running the op;
- schedulers.py: the "depth", "agenda" and "dynet" schedulers;
- rules.py: how each op family runs on stacked samples;
- gather.py: collecting the samples' rows into one argument (and scattering gradients back);
- execute.py: running the batches, turning placeholders into rows;
- stats.py: what a block did;
- explain.py: what lost batching in it (`stats().lost`), and what to write instead.
"""

from minitorch.autobatch.recorder import BatchRecorder, batch, stats
from minitorch.autobatch.schedulers import SCHEDULERS, check_schedule, schedule
from minitorch.autobatch.stats import LostBatching, Stats

__all__ = [
    "SCHEDULERS", "BatchRecorder", "LostBatching", "Stats", "batch", "check_schedule",
    "schedule", "stats",
]  # fmt: skip
