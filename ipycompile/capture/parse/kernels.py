"""Kernels from Inductor's output code (the ``inductor_output_code`` payload).

Inductor writes one Python wrapper module per compiled graph. It defines each
generated kernel as ``name = async_compile.<backend>(..., '''<source>''', ...)``
(``triton`` on GPU, ``cpp_pybinding`` -- ``cpp`` in older torch -- on CPU), and
launches them, with extern kernels and ATen fallbacks, from ``call`` (a
``Runner.call`` method in torch 2.11 and 2.13, a module-level ``def call(args)``
in older releases), from cudagraph ``partition_N`` functions and from the
functions it generates for ``cond`` / ``while_loop`` / ``scan`` subgraphs.

The parser reads the text line by line, never executes or imports it, and
never raises: truncated or foreign text yields whatever kernels it still names.

Where the ATen ops of a kernel come from, best first:

* the ``# Topologically Sorted Source Nodes: [...], Original ATen: [...]``
  comment Inductor writes above a kernel definition (Triton) and above a launch
  (Triton and extern calls; torch 2.13 writes none for C++ kernels, and its
  comment above an extern call can name the nodes of the C++ kernel launched
  just before it, e.g. ``[relu, matmul] ... [aten.relu, aten.mm]`` above
  ``extern_kernels.mm``, or leave out the op the call runs, e.g.
  ``[aten.relu, aten.add]`` above ``extern_kernels.addmm``: an extern kernel
  keeps the ops of its comment that no generated kernel of the module fuses,
  and its own op is added when missing);
* the kernel's descriptive name: Inductor joins the *sorted* names of the
  original ATen ops (``cpp_fused_add_copy__mul_select_15``,
  ``triton_per_fused_add_addmm_native_layer_norm_native_layer_norm_backward_1``).
  The name is split back into ops with a vocabulary of multi-word op names
  (extended by the ops that comments in the same module name), the sort order
  (a part that sorts before its predecessor continues it: ``gelu_gelu_backward``
  -> ``gelu``, ``gelu_backward``) and the underscores of in-place and private
  ops (``copy_``, ``_to_copy``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Optional

from ...report.model import CompileId, Kernel, KernelLaunch
from .kernel_code import read_kernel_code
from .launches import TensorTable, launch_of, signature_dtypes

__all__ = ["parse_output_code", "ops_from_kernel_name", "allocation_nodes"]

# ``name = async_compile.triton(`` / ``.cpp_pybinding(`` / ``.cpp(``.
_DEFINITION = re.compile(r"^[ \t]*(?P<name>[A-Za-z_]\w*)[ \t]*=[ \t]*async_compile\.(?P<method>\w+)\(", re.M)
_BACKENDS = {"triton": "triton", "cpp_pybinding": "cpp", "cpp": "cpp"}
_OPEN_STRING = re.compile(r"""[rRuU]?('''|\"\"\")""")

# The provenance comment; older releases write it without "Topologically Sorted".
_ORIGIN = re.compile(
    r"#\s*(?:(?:Topologically Sorted|Unsorted)\s+)?"
    r"(?:Source Nodes:\s*\[(?P<nodes>[^\]]*)\],\s*)?"
    r"Original ATen:\s*\[(?P<ops>[^\]]*)\]"
)

# A buffer the wrapper allocates (``buf3 = empty_strided_cuda(...)``, ``torch.empty(...)``, ``x.new_empty(...)``).
_ALLOCATION = re.compile(r"^\s*(?P<buf>\w+)\s*=\s*(?:empty_strided\w*|torch\.empty\w*|\w+\.new_empty\w*)\(")

# Calls inside the wrapper's functions that launch something.
_LAUNCH = re.compile(
    r"(?<![\w.])(?:"
    r"extern_kernels\.(?P<extern>\w+)"
    r"|(?:torch\.ops\.(?P<ns>\w+)|(?P<aten>aten))\.(?P<op>\w+)(?:\.(?P<overload>\w+))?"
    r"|(?P<kernel>[A-Za-z_]\w*)(?P<run>\.run)?"
    r")\("
)

# Top-level helpers Inductor appends for benchmarking; nothing there is a launch.
_SKIPPED_BLOCK = re.compile(r"^(?:def (?:get_args|benchmark_compiled_module)\b|if __name__\s*==)")
_FUNCTION = re.compile(r"^\s*def \w+\(")

_TRITON_DECORATOR = re.compile(
    r"@(?:triton_heuristics\.)?(?P<kind>pointwise|reduction|persistent_reduction|cooperative_reduction"
    r"|template|foreach|split_scan|user_autotune)\("
)
_TRITON_KINDS = {
    "pointwise": "pointwise",
    "reduction": "reduction",
    "cooperative_reduction": "reduction",
    "persistent_reduction": "persistent_reduction",
    "template": "template",
    "foreach": "foreach",
}
# Inductor names Triton kernels ``triton_<first 3 letters of the category>_...``.
_TRITON_PREFIXES = {
    "poi": "pointwise",
    "red": "reduction",
    "coo": "reduction",
    "per": "persistent_reduction",
    "tem": "template",
    "for": "foreach",
}

# C++ kernels: what a reduction loop and a GEMM template look like.
_CPP_REDUCTION = re.compile(r"\btmp_acc\d|[Ww]elford|vec_reduce_all|cascade_sum|#pragma omp[^\n]*\breduction\b")
_CPP_TEMPLATE = re.compile(r"micro_gemm|MicroGemm")

# Ops that reduce (or normalize over) a dimension: a C++ kernel fusing one is a reduction.
_REDUCTION_OPS = frozenset(
    """sum mean amax amin max min prod var var_mean std std_mean argmax argmin logsumexp norm any all
    aminmax count_nonzero linalg_vector_norm softmax log_softmax _softmax _log_softmax _safe_softmax
    _softmax_backward_data _log_softmax_backward_data native_layer_norm native_layer_norm_backward
    layer_norm rms_norm _fused_rms_norm _fused_rms_norm_backward native_batch_norm
    native_batch_norm_backward _native_batch_norm_legit _native_batch_norm_legit_functional
    _native_batch_norm_legit_no_training native_group_norm native_group_norm_backward group_norm
    nll_loss_forward nll_loss2d_forward mse_loss binary_cross_entropy""".split()
)

# Op names with an underscore inside that a kernel name may join with its neighbours.
_MULTIWORD_OPS = frozenset(
    """_to_copy _log_softmax _log_softmax_backward_data _softmax _softmax_backward_data _safe_softmax
    _unsafe_view _unsafe_index _unsafe_index_put _unsafe_masked_index _reshape_alias _local_scalar_dense
    _native_batch_norm_legit _native_batch_norm_legit_functional _native_batch_norm_legit_no_training
    _adaptive_avg_pool2d _adaptive_avg_pool2d_backward _fused_rms_norm _fused_rms_norm_backward
    _scaled_dot_product_flash_attention _scaled_dot_product_efficient_attention
    _scaled_dot_product_flash_attention_for_cpu _scaled_dot_product_cudnn_attention
    _scaled_mm _int_mm _grouped_mm _scaled_grouped_mm _addmm_activation _embedding_bag _chunk_cat
    _prelu_kernel _prelu_kernel_backward _weight_norm_interface _upsample_nearest_exact2d
    _assert_scalar _assert_async _amp_update_scale_ _foreach_add _foreach_add_ _foreach_mul
    _foreach_mul_ _foreach_div _foreach_div_ _foreach_sub _foreach_addcmul _foreach_addcmul_
    _foreach_addcdiv _foreach_addcdiv_ _foreach_sqrt _foreach_lerp _foreach_copy _foreach_copy_
    _foreach_neg _foreach_pow _foreach_maximum _foreach_minimum _foreach_reciprocal _foreach_abs
    _foreach_clamp_min _foreach_clamp_max _foreach_sign _foreach_rsqrt _foreach_clone
    native_layer_norm native_layer_norm_backward native_batch_norm native_batch_norm_backward
    native_group_norm native_group_norm_backward native_dropout native_dropout_backward layer_norm
    group_norm rms_norm batch_norm_backward convert_element_type constant_pad_nd gelu_backward
    silu_backward sigmoid_backward tanh_backward threshold_backward hardtanh_backward hardswish_backward
    hardsigmoid_backward leaky_relu leaky_relu_ leaky_relu_backward elu_backward softplus_backward
    mish_backward log_sigmoid_forward log_sigmoid_backward embedding_dense_backward index_put index_put_
    index_select index_add index_add_ index_copy index_copy_ index_fill index_fill_ index_reduce
    scatter_add scatter_add_ scatter_reduce scatter_reduce_ select_scatter slice_scatter as_strided
    as_strided_ as_strided_scatter diagonal_scatter select_backward slice_backward masked_fill
    masked_fill_ masked_scatter full_like zeros_like ones_like empty_like rand_like randn_like
    randint_like new_zeros new_ones new_empty new_full new_empty_strided empty_strided scalar_tensor
    lift_fresh lift_fresh_copy clamp_min clamp_min_ clamp_max floor_divide true_divide bitwise_and
    bitwise_or bitwise_xor bitwise_not bitwise_left_shift bitwise_right_shift logical_and logical_or
    logical_not logical_xor nan_to_num max_pool2d_with_indices max_pool2d_with_indices_backward
    max_pool3d_with_indices max_pool3d_with_indices_backward avg_pool2d avg_pool2d_backward avg_pool3d
    avg_pool3d_backward adaptive_avg_pool2d adaptive_max_pool2d upsample_nearest1d upsample_nearest2d
    upsample_nearest2d_backward upsample_nearest3d upsample_bilinear2d upsample_bicubic2d
    upsample_linear1d upsample_trilinear3d reflection_pad1d reflection_pad2d reflection_pad3d
    replication_pad1d replication_pad2d replication_pad3d nll_loss_forward nll_loss_backward
    nll_loss2d_forward nll_loss2d_backward mse_loss mse_loss_backward binary_cross_entropy
    binary_cross_entropy_backward binary_cross_entropy_with_logits smooth_l1_loss l1_loss huber_loss
    kl_div var_mean std_mean split_with_sizes repeat_interleave take_along_dim one_hot pixel_shuffle
    pixel_unshuffle grid_sampler_2d grid_sampler_2d_backward convolution_backward
    scaled_dot_product_attention unfold_backward expand_as type_as view_as view_as_real
    view_as_complex tril_indices triu_indices cosine_similarity pairwise_distance count_nonzero
    linalg_vector_norm channel_shuffle resize_as_ while_loop map_impl invoke_subgraph associative_scan
    flex_attention flex_attention_backward auto_functionalized with_effects run_and_save_rng_state
    run_with_rng_state triton_kernel_wrapper_functional triton_kernel_wrapper_mutation""".split()
)

# Names that are not ``aten`` ops: higher-order ops print bare, a few prims keep their namespace.
_BARE_OPS = frozenset(
    """cond while_loop scan map_impl invoke_subgraph associative_scan flex_attention
    flex_attention_backward auto_functionalized with_effects run_and_save_rng_state run_with_rng_state
    triton_kernel_wrapper_functional triton_kernel_wrapper_mutation""".split()
)
_PRIMS_OPS = frozenset({"convert_element_type", "device_put", "iota"})
_WORD = re.compile(r"_*[^_]*")  # one part of a kernel name, with the underscores leading it


@dataclass
class _Origin:
    """One provenance comment: FX node names and ATen ops."""

    nodes: list[str]
    ops: list[str]


@dataclass
class _Found:
    """A kernel as the scan sees it, before its ATen ops are settled."""

    kernel: Kernel
    origins: list[_Origin] = field(default_factory=list)
    launch_lines: list[str] = field(default_factory=list)
    launches: dict[str, KernelLaunch] = field(default_factory=dict)  # by the launch's arguments

    def add_launch(self, launch: Optional[KernelLaunch]) -> None:
        if launch is None:
            return
        key = repr((launch.shapes, launch.dtypes, launch.concrete))
        self.launches.setdefault(key, launch).count += 1


def parse_output_code(code: str, compile_id: Optional[CompileId] = None, graph_stage: str = "") -> list[Kernel]:
    """The kernels one Inductor output-code module defines or launches.

    Generated kernels (Triton, C++) come with their source; extern kernels
    (``extern_kernels.mm``) and op fallbacks (``aten.xxx.default`` from
    ``torch.ops.aten.xxx.default(...)``) with their launch lines. ``launches``
    counts the launch sites in ``call`` and the functions it runs (cudagraph
    partitions, control-flow subgraphs): a site inside a loop counts once.
    Kernels come in the order the module first mentions them. ``static_launches``:
    each Triton or extern launch's arguments as shapes and dtypes, read from the
    tensors the wrapper declares (:mod:`.launches`; none with dynamic shapes).
    Never raises; empty or unrelated text gives ``[]``.
    """
    if not isinstance(code, str) or "(" not in code:
        return []
    found: dict[str, _Found] = {}
    skeleton, sources = _mask_sources(code)
    table = TensorTable(code)
    pending: Optional[_Origin] = None
    skipping = False
    for number, line in enumerate(skeleton.split("\n")):
        stripped = line.strip()
        if not stripped:  # a blank line (a kernel's source is blank here) starts and ends no block
            continue
        if skipping and not line[0].isspace():
            skipping = False
        if line[0] in "di" and _SKIPPED_BLOCK.match(line):
            skipping = True
        if skipping:
            continue
        if stripped.startswith("#"):
            origin = _ORIGIN.search(stripped)
            if origin:
                pending = _Origin(_split_list(origin.group("nodes")), _split_list(origin.group("ops")))
            continue
        if number in sources:
            name, backend, source = sources[number]
            entry = found.setdefault(name, _Found(Kernel(name=name, backend=backend, kind="")))
            entry.kernel.backend, entry.kernel.source = backend, source
            if pending is not None:
                entry.origins.append(pending)
                pending = None
            continue
        if _FUNCTION.match(line):
            pending = None
            continue
        table.read(line)
        for launch in _LAUNCH.finditer(line):
            entry = _launched(launch, found)
            if entry is None:
                continue
            entry.kernel.launches += 1
            entry.launch_lines.append(stripped)
            if entry.kernel.backend in ("triton", "extern"):
                hint = signature_dtypes(entry.kernel.source) if entry.kernel.backend == "triton" else None
                entry.add_launch(launch_of(entry.kernel.name, entry.kernel.backend, line, launch.end() - 1, table, hint))
            if pending is not None:
                entry.origins.append(pending)
                pending = None
    named = {_bare(op) for entry in found.values() for origin in entry.origins for op in origin.ops}
    vocabulary = _MULTIWORD_OPS | (named - {""})
    kernels = []
    for entry in found.values():
        kernel = entry.kernel
        _settle(entry, vocabulary)
        kernel.compile_id, kernel.graph_stage = compile_id, graph_stage
        kernel.static_launches = list(entry.launches.values())
        kernels.append(kernel)
    # An extern call runs its own op: the ops its comment shares with a generated kernel
    # of this module (e.g. the gelu fused just before an addmm) are that kernel's.
    generated = {op for k in kernels if k.backend != "extern" for op in k.aten_ops}
    for k in kernels:
        if k.backend == "extern":
            own = _extern_op(k.name)
            k.aten_ops = [op for op in k.aten_ops if op == own or op not in generated]
    for k in kernels:
        k.code = read_kernel_code(k)
    return kernels


def allocation_nodes(line: str, following: Iterable[str]) -> list[str]:
    """The FX nodes of the first launch that uses the buffer ``line`` of Inductor's wrapper code
    allocates (``buf3 = empty_strided_cuda(...)``): the ``Source Nodes`` of the provenance comment
    above that launch, read from the ``following`` lines; [] when ``line`` allocates nothing or no
    launch uses the buffer there."""
    m = _ALLOCATION.match(line or "")
    if not m:
        return []
    buf = re.compile(rf"(?<![\w.]){re.escape(m.group('buf'))}(?!\w)")
    nodes: list[str] = []
    for text in following:
        if not text:
            break
        origin = _ORIGIN.search(text)
        if origin and origin.group("nodes") is not None:
            nodes = _split_list(origin.group("nodes"))
            continue
        if buf.search(text) and "(" in text and not _ALLOCATION.match(text) and not text.strip().startswith(("del ", "#")):
            return nodes
    return []


def _mask_sources(code: str) -> tuple[str, dict[int, tuple[str, str, str]]]:
    """Blank out kernel sources (newlines kept) so the line scan sees only wrapper
    code; return that text and, by line number, each definition's
    ``(name, backend, source)``."""
    sources: dict[int, tuple[str, str, str]] = {}
    pieces: list[str] = []
    done = 0
    for match in _DEFINITION.finditer(code):
        if match.start() < done:  # inside an earlier kernel's source
            continue
        backend = _BACKENDS.get(match.group("method"))
        if backend is None:
            continue
        line_end = code.find("\n", match.end())
        line_end = len(code) if line_end < 0 else line_end
        opening = _OPEN_STRING.search(code, match.end(), line_end)
        source = ""
        if opening:
            start = opening.end()
            end = code.find(opening.group(1), start)
            end = len(code) if end < 0 else end
            source = code[start:end].strip("\n")
            pieces += [code[done:start], _blank(code[start:end])]
            done = end
        sources[code.count("\n", 0, match.start())] = (match.group("name"), backend, source)
    pieces.append(code[done:])
    return "".join(pieces), sources


def _blank(text: str) -> str:
    """``text`` with every character but its newlines a space."""
    return "\n".join(" " * len(line) for line in text.split("\n"))


def _launched(launch: re.Match[str], found: dict[str, _Found]) -> Optional[_Found]:
    """The kernel a launch-pattern match starts, or ``None`` for ordinary calls."""
    if launch.group("extern"):
        name = f"extern_kernels.{launch.group('extern')}"
        return found.setdefault(name, _Found(Kernel(name=name, backend="extern", kind="extern")))
    if launch.group("op"):
        namespace = launch.group("ns") or "aten"
        parts = [namespace, launch.group("op")] + ([launch.group("overload")] if launch.group("overload") else [])
        name = ".".join(parts)
        return found.setdefault(name, _Found(Kernel(name=name, backend="extern", kind="extern")))
    name = launch.group("kernel")
    if name in found:
        return found[name]
    if launch.group("run") and name.startswith("triton_"):  # defined outside this text (truncated)
        return found.setdefault(name, _Found(Kernel(name=name, backend="triton", kind="")))
    return None


def _settle(entry: _Found, vocabulary: frozenset[str]) -> None:
    """Fill ``aten_ops``, ``source_nodes``, ``kind`` (and an extern's source)."""
    kernel = entry.kernel
    kernel.source_nodes = _unique(node for origin in entry.origins for node in origin.nodes)
    kernel.aten_ops = _unique(op for origin in entry.origins for op in origin.ops)
    if kernel.backend == "extern":
        kernel.source = "\n".join(_unique(entry.launch_lines))
        kernel.aten_ops = _unique([*kernel.aten_ops, _extern_op(kernel.name)])
        return
    if not kernel.aten_ops:
        kernel.aten_ops = ops_from_kernel_name(kernel.name, vocabulary)
    kernel.kind = _triton_kind(kernel) if kernel.backend == "triton" else _cpp_kind(kernel)


def _extern_op(name: str) -> str:
    """``extern_kernels.mm`` -> ``aten.mm``; ``aten.index_put_.default`` -> ``aten.index_put_``."""
    namespace, op = name.split(".")[:2]
    return f"aten.{op}" if namespace == "extern_kernels" else f"{namespace}.{op}"


def _triton_kind(kernel: Kernel) -> str:
    decorator = _TRITON_DECORATOR.search(kernel.source)
    if decorator:
        return _TRITON_KINDS.get(decorator.group("kind"), "other")
    prefix = re.match(r"triton_([a-z]{3})_", kernel.name)
    return _TRITON_PREFIXES.get(prefix.group(1), "other") if prefix else "other"


def _cpp_kind(kernel: Kernel) -> str:
    if _CPP_TEMPLATE.search(kernel.source):
        return "template"
    if _CPP_REDUCTION.search(kernel.source) or any(_bare(op) in _REDUCTION_OPS for op in kernel.aten_ops):
        return "reduction"
    return "pointwise" if kernel.source else "other"


def ops_from_kernel_name(name: str, vocabulary: frozenset[str] = _MULTIWORD_OPS) -> list[str]:
    """The ops a descriptive kernel name fuses: ``cpp_fused__to_copy_add_copy__0``
    -> ``["aten._to_copy", "aten.add", "aten.copy_"]``; ``[]`` for names
    without a ``fused_`` part. ``vocabulary`` holds op names containing ``_``."""
    match = re.search(r"(?:^|_)fused_(.+)$", re.sub(r"_\d+$", "", name))
    if not match:
        return []
    body = match.group(1)
    ops: list[str] = []
    at = 0
    while at < len(body):
        op = _known_op(body, at, vocabulary)
        if op is not None:
            ops.append(op)
        else:
            op = _next_word(body, at, vocabulary)
            if ops and op <= ops[-1]:  # out of sort order: it continues the previous op
                ops[-1] += "_" + op
            else:
                ops.append(op)
        at += len(op) + 1  # the op and the "_" that joins it to the next
    return _unique(_qualified(op) for op in ops if op.strip("_"))


def _known_op(body: str, at: int, vocabulary: frozenset[str]) -> Optional[str]:
    """The longest vocabulary op at ``body[at:]`` that ends where a name part ends."""
    ends = [m.start() for m in re.finditer("_", body[at:])] + [len(body) - at]
    for end in reversed(ends):
        if body[at : at + end] in vocabulary:
            return body[at : at + end]
    return None


def _next_word(body: str, at: int, vocabulary: frozenset[str]) -> str:
    """One name part at ``body[at:]``, with its leading underscores (a private op,
    ``_to``) and a trailing one when ``__`` follows (an in-place op, ``copy_``) --
    unless a private op ends the run: ``_softmax__to_copy`` -> ``_softmax``."""
    match = _WORD.match(body, at)
    word = match.group() if match else body[at:]
    rest = body[at + len(word) :]
    if rest == "_" or (rest.startswith("__") and not (word.startswith("_") and _known_op(rest, 1, vocabulary))):
        word += "_"
    return word


def _qualified(op: str) -> str:
    if op in _BARE_OPS:
        return op
    return f"prims.{op}" if op in _PRIMS_OPS else f"aten.{op}"


def _bare(op: str) -> str:
    """``aten.native_layer_norm`` -> ``native_layer_norm``."""
    return op.rsplit(".", 1)[-1]


def _split_list(text: Optional[str]) -> list[str]:
    return [item.strip() for item in (text or "").split(",") if item.strip()]


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
