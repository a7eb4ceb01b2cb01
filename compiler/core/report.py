"""``CompiledModel.report()``: a text report of one compilation."""

from __future__ import annotations

from collections import Counter

import onnx

from compiler.core.advisor import format_advice


def op_histogram(model: onnx.ModelProto) -> Counter:
    """ONNX op type -> node count, nested Loop/If/Scan bodies and model-local
    functions' call sites included (``domain:op`` outside the default domain)."""
    counts: Counter = Counter()

    def walk(graph: onnx.GraphProto) -> None:
        for node in graph.node:
            counts[f"{node.domain}:{node.op_type}" if node.domain else node.op_type] += 1
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    walk(attr.g)
                for g in attr.graphs:
                    walk(g)

    walk(model.graph)
    return counts


def format_report(compiled) -> str:
    """The report of a ``CompiledModel``: op histogram, passes (time in ms,
    changed or not), rules fired (count), rules declined (count, reason),
    and the performance advisor (``compiler.core.advisor``: each slow form,
    its source line and fix; "(none)" when the model has none)."""
    lines = [f"compiled in {compiled.compile_seconds * 1e3:.1f} ms; "
             f"{len(compiled.model.graph.node)} top-level ONNX nodes", "", "ONNX ops:"]
    hist = op_histogram(compiled.model)
    width = max((len(k) for k in hist), default=0)
    lines += [f"  {op:<{width}}  {n}" for op, n in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))]
    lines += ["", "passes (ms, changed):"]
    width = max((len(r.name) for r in compiled.history), default=0)
    lines += [f"  {i:2d} {r.name:<{width}}  {r.seconds * 1e3:8.2f}  {'changed' if r.changed else '-'}"
              for i, r in enumerate(compiled.history)]
    log = compiled.rewrites
    lines += ["", f"rules fired ({log.count} rewrites" + (f", opt-bisect limit {log.limit}" if log.limit is not None
                                                          else "") + "):"]
    lines += [f"  {rule}  x{n}" for rule, n in log.fired.most_common()] or ["  (none)"]
    lines += ["", "rules declined (the pattern matched, the rewrite said no):"]
    lines += [f"  {rule}  x{n}: {reason}" for (rule, reason), n in log.declined.most_common()] or ["  (none)"]
    lines += ["", "performance advisor (slow forms, where, what to change):"]
    lines += format_advice(getattr(compiled, "advice", [])) or ["  (none)"]
    return "\n".join(lines)
