"""One module per operand, named after NVIDIA's state (`state-driver` → :mod:`driver`).

Each module exposes `STATE` (the upstream state directory name), `KEY` (a short name used for Pulumi children)
and `render(ctx) -> list[dict]`, which returns the operand's objects in NVIDIA's apply order, or `[]` when the
operand is disabled. :mod:`gpu_operator.render.registry` lists them in state order.
"""
