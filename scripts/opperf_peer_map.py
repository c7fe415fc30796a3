# opperf_peer_map.py: the one mapping table of `opperf run --baseline`: each opperf operator
# -> its PyTorch callable and NumPy function with the parameter translation (axis -> dim,
# keepdims -> keepdim, NHWC as a channels-last view, ...), or NoEq("why") when there is no
# equivalent with the same semantics. Used by scripts/opperf-peer.py (/usr/bin/python3).
import math

F_ALL = ("float32", "float64", "int32", "int64", "bool")
F_FLOAT = ("float32", "float64")


class NoEq:
    def __init__(self, why):
        self.why = why


class Unsupported(Exception):
    """This case's params have no equivalent (e.g. a layout or offset the peer lacks)."""


class E:
    """name: the peer callable shown in reports; fn(M, I, P): the call, on the library module
    M, inputs I (name -> tensor, None when absent) and params P; returns the outputs in
    opperf's order. grad: torch can differentiate it like opperf's backward. nocheck: why
    --check cannot compare values (random operators)."""

    def __init__(self, name, fn, grad=True, dtypes=F_ALL, nocheck=None, nograd=None):
        self.name, self.fn, self.grad, self.dtypes = name, fn, grad and not nograd, dtypes
        self.nocheck, self.nograd = nocheck, nograd

    @property
    def random(self):
        return self.nocheck is not None


class P:
    """opperf's params as text ("true", "all", "1,1", "none") with typed accessors."""

    def __init__(self, d):
        self.d = d
        self.memo = {}  # parsed once: the timed calls pay a dict lookup, not the parsing

    def _get(self, kind, k, parse):
        key = (kind, k)
        if key not in self.memo:
            self.memo[key] = parse(self.d.get(k))
        v = self.memo[key]
        return list(v) if kind == "l" else v

    def s(self, k):
        return self.d[k]

    def i(self, k):
        return self._get("i", k, lambda v: int(float(v)))

    def f(self, k):
        return self._get("f", k, float)

    def b(self, k):
        return self._get("b", k, lambda v: v == "true")

    def axis(self, k):
        return self._get("a", k, lambda v: None if v in (None, "all") else int(v))

    def lst(self, k):
        return self._get("l", k, lambda v: [] if v in (None, "none", "") else [int(t) for t in v.split(",")])


# ---------------------------------------------------------------- torch helpers
def _dims(x, axis):
    return tuple(range(x.dim())) if axis is None else (axis,)


def t_red(name, keep_kw="keepdim"):
    """A torch reduction over axis (None: all) with keepdims."""
    def fn(M, I, p):
        x, ax, kd = I["x"], p.axis("axis"), p.b("keepdims")
        f = getattr(M, name)
        if ax is None and not kd:
            return f(x)
        return f(x, dim=_dims(x, ax), keepdim=kd)
    return fn


def t_red1(name):
    """Single-dim torch reductions (prod, argmax, all, any, logsumexp): flatten for 'all'."""
    def fn(M, I, p):
        x, ax, kd = I["x"], p.axis("axis"), p.b("keepdims")
        if ax is None:
            r = getattr(M, name)(x.reshape(-1), 0)
            r = r[0] if isinstance(r, tuple) else r
            return r.reshape([1] * x.dim()) if kd else r
        r = getattr(M, name)(x, ax, keepdim=kd)
        return r[0] if isinstance(r, tuple) else r
    return fn


def n_red(name):
    def fn(M, I, p):
        ax = p.axis("axis")
        return getattr(M, name)(I["x"], axis=ax, keepdims=p.b("keepdims"))
    return fn


def F(M):
    return M.nn.functional


def chlast(M, x, layout, nd):
    """Channels-last input (N, spatial..., C) as the NC... view torch takes (no copy: torch
    runs its channels-last kernels); returns (view, undo) where undo views a result back."""
    if layout in ("NCW", "NCHW", "NCDHW"):
        return x, lambda y: y
    perm = [0, nd + 1] + list(range(1, nd + 1))
    back = [0] + list(range(2, nd + 2)) + [1]
    return x.permute(*perm), lambda y: y.permute(*back)


def conv(nd, transpose=False, post=None):
    def fn(M, I, p):
        x, und = chlast(M, I["x"], p.d.get("layout", "NCHW"), nd)
        kw = dict(stride=p.i("stride"), padding=p.i("pad"), dilation=p.i("dilation"),
                  groups=p.i("groups") if "groups" in p.d else x.shape[1])
        if transpose:
            f = getattr(F(M), "conv_transpose%dd" % nd)
            y = f(x, I["w"], I.get("b"), kw["stride"], kw["padding"], p.i("output_padding"),
                  kw["groups"], kw["dilation"])
        else:
            y = getattr(F(M), "conv%dd" % nd)(x, I["w"], I.get("b"), **kw)
        if post:
            y = post(M, I, p, y)
        return und(y)
    return fn


def bn_post(relu):
    def post(M, I, p, y):
        y = F(M).batch_norm(y, I["running_mean"], I["running_var"], I["gamma"], I["beta"],
                            False, 0.0, p.f("eps"))
        return F(M).relu(y) if relu else y
    return post


def pool_args(p, nd):
    k = p.lst("kernel") or [2]
    k = k * nd if len(k) == 1 else k
    s = p.lst("stride") or [0]
    s = s * nd if len(s) == 1 else s
    s = [kk if ss == 0 else ss for kk, ss in zip(k, s)]
    pd = p.lst("pad") or [0]
    pd = pd * nd if len(pd) == 1 else pd
    return k, s, pd


def pool(nd, kind):
    layouts = {1: "NCW", 2: "NCHW", 3: "NCDHW"}

    def fn(M, I, p):
        x, und = chlast(M, I["x"], p.d.get("layout", layouts[nd]), nd)
        k, s, pd = pool_args(p, nd)
        f = F(M)
        if kind == "max":
            y = getattr(f, "max_pool%dd" % nd)(x, k, s, pd)
        elif kind == "avg":
            y = getattr(f, "avg_pool%dd" % nd)(x, k, s, pd, count_include_pad=p.b("count_include_pad"))
        elif nd == 1:  # sum: avg_pool1d has no divisor_override
            y = f.avg_pool1d(x, k, s, pd, count_include_pad=True) * k[0]
        else:
            y = getattr(f, "avg_pool%dd" % nd)(x, k, s, pd, count_include_pad=True, divisor_override=1)
        return und(y)
    return fn


def gpool(nd, kind):
    layouts = {1: "NCW", 2: "NCHW", 3: "NCDHW"}

    def fn(M, I, p):
        x = I["x"]
        last = p.d.get("layout", layouts[nd]) != layouts[nd]
        dims = tuple(range(1, nd + 1)) if last else tuple(range(2, nd + 2))
        return M.amax(x, dim=dims, keepdim=True) if kind == "max" else M.mean(x, dim=dims, keepdim=True)
    return fn


def t_split(M, I, p, sizes):
    return tuple(t.contiguous() for t in M.split(I["x"], sizes, dim=p.axis("axis") or 0))


def split_sections(M, I, p):
    x, ax = I["x"], p.axis("axis") or 0
    secs = p.lst("sections")
    if -1 in secs:
        secs[secs.index(-1)] = x.shape[ax] - (sum(secs) + 1)
    return t_split(M, I, p, secs)


def d2s(M, x, b, mode, inverse):
    n, c, h, w = x.shape
    if not inverse:
        if mode == "crd":
            return F(M).pixel_shuffle(x, b)
        y = x.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
        return y.reshape(n, c // (b * b), h * b, w * b)
    if mode == "crd":
        return F(M).pixel_unshuffle(x, b)
    y = x.reshape(n, c, h // b, b, w // b, b).permute(0, 3, 5, 1, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


def t_pad(M, I, p):
    x, pw, mode = I["x"], p.lst("pad_width"), p.s("mode")
    # opperf: pairs for the trailing axes, first pair = first of them; torch: last axis first
    pairs = [pw[i:i + 2] for i in range(0, len(pw), 2)]
    flat = [v for pr in reversed(pairs) for v in pr]
    if mode == "constant":
        return F(M).pad(x, flat, "constant", p.f("value"))
    tm = {"edge": "replicate", "reflect": "reflect"}[mode]
    k = len(pairs)
    if k > 3 or x.dim() < k + 1 or not x.is_floating_point():
        raise Unsupported("torch pads %s on 1-3 trailing axes of a float tensor of higher rank" % tm)
    return F(M).pad(x, flat, tm)


def t_slice(M, I, p):
    x, b, e = I["x"], p.lst("begin"), p.lst("end")
    st = p.lst("step") if "step" in p.d else []
    idx = []
    for d in range(max(len(b), len(e), len(st))):
        s = st[d] if d < len(st) else 1
        if s < 0:
            raise Unsupported("torch slicing has no negative steps")
        idx.append(slice(b[d] if d < len(b) else None, e[d] if d < len(e) else None, s))
    return x[tuple(idx)].clone()


def t_contig(M, I, p):
    x, perm, st = I["x"], p.lst("perm"), p.lst("step")
    if st:
        x = x[tuple(slice(None, None, s) for s in st)]
    if perm:
        x = x.permute(*perm)
    return x.contiguous()


def t_transpose(M, I, p):
    x, m = I["x"], p.s("perm")
    perm = {"reverse": list(range(x.dim()))[::-1], "nchw2nhwc": [0, 2, 3, 1], "nhwc2nchw": [0, 3, 1, 2]}[m]
    return x.permute(*perm).contiguous()


def t_dense(relu):
    def fn(M, I, p):
        x = I["x"]
        if p.b("flatten"):
            x = x.reshape(x.shape[0], -1)
        y = F(M).linear(x, I["w"], I.get("b"))
        return F(M).relu(y) if relu else y
    return fn


def t_cell(kind):
    def fn(M, I, p):
        x, h, b = I["x"], I.get("h"), I.get("b")
        H = I["w_hh"].shape[1]
        if h is None:
            h = M.zeros(x.shape[0], H, dtype=x.dtype)
        bi, bh = (b[0], b[1]) if b is not None else (None, None)
        if kind == "lstm":
            c = I.get("c")
            if c is None:
                c = M.zeros(x.shape[0], H, dtype=x.dtype)
            return M.lstm_cell(x, (h, c), I["w_ih"], I["w_hh"], bi, bh)
        f = {"gru": M.gru_cell, "tanh": M.rnn_tanh_cell, "relu": M.rnn_relu_cell}[kind]
        return f(x, h, I["w_ih"], I["w_hh"], bi, bh)
    return fn


def t_var(name):
    def fn(M, I, p):
        dd = p.i("ddof")
        if dd not in (0, 1):
            raise Unsupported("torch.%s takes ddof 0 or 1 only (unbiased)" % name)
        x, ax, kd = I["x"], p.axis("axis"), p.b("keepdims")
        return getattr(M, name)(x, dim=_dims(x, ax), unbiased=dd == 1, keepdim=kd)
    return fn


def t_scan(name):
    def fn(M, I, p):  # axis 'all': over the flattened input, in the input's shape (opperf)
        x, ax = I["x"], p.axis("axis")
        if ax is None:
            return getattr(M, name)(x.reshape(-1), 0).reshape(x.shape)
        return getattr(M, name)(x, ax)
    return fn


def t_sort(idx):
    def fn(M, I, p):
        x, ax = I["x"], p.axis("axis")
        if ax is None:
            x, ax = x.reshape(-1), 0
        return M.sort(x, dim=ax, descending=p.b("descending"), stable=True)[idx]
    return fn


def t_take(M, I, p):
    x, idx, ax = I["x"], I["indices"], p.axis("axis") % I["x"].dim()
    y = M.index_select(x, ax, idx.reshape(-1))
    return y.reshape(x.shape[:ax] + idx.shape + x.shape[ax + 1:])


def t_trsm(M, I, p):
    a, b, lower = I["a"], I["b"], p.b("lower")
    a = a.tril() if lower else a.triu()
    if p.b("transpose"):
        a, lower = a.transpose(0, 1), not lower
    return M.linalg.solve_triangular(a, p.f("alpha") * b, upper=not lower, left=not p.b("rightside"))


def op_t(x, t):
    return x.transpose(-1, -2) if t else x


def t_creation(kind):
    def fn(M, I, p):
        dt = I["__dtype"]
        shp = p.lst("shape") if "shape" in p.d else None
        if kind == "zeros":
            return M.zeros(shp, dtype=dt)
        if kind == "ones":
            return M.ones(shp, dtype=dt)
        if kind == "empty":
            return M.empty(shp, dtype=dt)
        if kind == "full":
            return M.full(shp, p.f("value"), dtype=dt)
        if kind == "arange":
            n = math.prod(shp)
            return M.arange(n, dtype=M.float64).mul_(p.f("step")).add_(p.f("start")).to(dt).reshape(shp)
        if kind == "linspace":
            n = math.prod(shp)
            if not p.b("endpoint"):
                raise Unsupported("torch.linspace always includes the end point")
            return M.linspace(p.f("start"), p.f("stop"), n, dtype=dt).reshape(shp)
        if kind == "eye":
            if p.i("k") != 0:
                raise Unsupported("torch.eye has no diagonal offset k")
            m = p.i("M")
            return M.eye(p.i("N"), p.i("N") if m < 0 else m, dtype=dt)
        x = I["x"]
        if kind == "zeros_like":
            return M.zeros_like(x)
        if kind == "ones_like":
            return M.ones_like(x)
        return M.full_like(x, p.f("value"))
    return fn


def t_rand(kind):
    def fn(M, I, p):
        dt = I["__dtype"]
        shp = p.lst("shape") if "shape" in p.d else None
        if kind == "uniform":
            return M.empty(shp, dtype=dt).uniform_(p.f("low"), p.f("high"))
        if kind == "normal":
            return M.empty(shp, dtype=dt).normal_(p.f("mean"), p.f("std"))
        if kind == "exponential":
            return M.empty(shp, dtype=dt).exponential_(p.f("rate"))
        if kind == "bernoulli":
            return M.empty(shp, dtype=dt).bernoulli_(p.f("p"))
        if kind == "randint":
            return M.randint(p.i("low"), p.i("high"), shp, dtype=dt)
        if kind == "poisson":
            return M.poisson(M.full(shp, p.f("lam"), dtype=M.float64)).to(dt)
        if kind == "random_gamma":
            return M._standard_gamma(M.full(shp, p.f("alpha"), dtype=dt)).mul_(p.f("scale"))
        if kind == "dropout_mask":
            q = 1 - p.f("p")
            return M.empty(shp, dtype=dt).bernoulli_(q).div_(q)
        if kind == "multinomial":
            return M.multinomial(I["probs"], p.i("num_samples"), replacement=True)
        x = I["x"]  # shuffle
        return x[M.randperm(x.shape[0])]
    return fn


RAND = "random values differ by construction"


def _bounds(I, p):
    """clip/clamp's min and max: None when absent ("none" is an infinity in opperf's params);
    integers for integer inputs (a float bound would promote the result to a float dtype)."""
    lo, hi = p.f("min"), p.f("max")
    lo = None if math.isinf(lo) else lo
    hi = None if math.isinf(hi) else hi
    if lo is None and hi is None:
        raise Unsupported("min and max both none: torch.clamp and numpy.clip need one bound")
    x = I["x"]
    if not (x.is_floating_point() if hasattr(x, "is_floating_point") else x.dtype.kind == "f"):
        lo, hi = (None if lo is None else int(lo)), (None if hi is None else int(hi))
    return lo, hi


def _clamp(M, I, p):
    lo, hi = _bounds(I, p)
    return M.clamp(I["x"], min=lo, max=hi)


def _clip_np(M, I, p):
    lo, hi = _bounds(I, p)
    return M.clip(I["x"], lo, hi)


# ---------------------------------------------------------------- the table
def torch_table():
    t = {}
    un = {"abs": "abs", "negative": "neg", "sign": "sign", "square": "square", "sqrt": "sqrt",
          "rsqrt": "rsqrt", "reciprocal": "reciprocal", "degrees": "rad2deg", "radians": "deg2rad",
          "exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p", "log2": "log2",
          "log10": "log10", "sin": "sin", "cos": "cos", "tan": "tan", "arcsin": "asin",
          "arccos": "acos", "arctan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
          "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "erf": "erf",
          "erfinv": "erfinv", "gammaln": "lgamma", "rint": "round", "fix": "trunc",
          "trunc": "trunc", "floor": "floor", "ceil": "ceil", "sigmoid": "sigmoid"}
    for op, f in un.items():
        t[op] = E("torch." + f, lambda M, I, p, f=f: getattr(M, f)(I["x"]))
    for op in ("round",):
        t[op] = NoEq("torch.round rounds halves to even; opperf's round rounds them away from zero (ties are generated on purpose)")
    t["cbrt"] = NoEq("torch has no cube root (x ** (1/3) is NaN for negative x)")
    t["rcbrt"] = NoEq("torch has no reciprocal cube root")
    t["gamma"] = NoEq("torch has no gamma function (only lgamma)")
    t["clip"] = E("torch.clamp", _clamp)
    t["clamp"] = E("torch.clamp", _clamp)
    bi = {"add": "add", "sub": "sub", "mul": "mul", "mod": "remainder", "pow": "pow",
          "maximum": "maximum", "minimum": "minimum", "hypot": "hypot", "atan2": "atan2"}
    for op, f in bi.items():
        t[op] = E("torch." + f, lambda M, I, p, f=f: getattr(M, f)(I["a"], I["b"]))
    t["div"] = E("torch.div", lambda M, I, p: M.div(I["a"], I["b"]) if I["a"].is_floating_point()
                 else M.div(I["a"], I["b"], rounding_mode="trunc"))
    inpl = {"iadd": "add_", "isub": "sub_", "imul": "mul_", "imod": "remainder_"}
    for op, f in inpl.items():
        t[op] = E("torch.Tensor." + f, lambda M, I, p, f=f: getattr(I["a"], f)(I["b"]), grad=False)
    t["idiv"] = E("torch.Tensor.div_", lambda M, I, p: I["a"].div_(I["b"]) if I["a"].is_floating_point()
                  else I["a"].div_(I["b"], rounding_mode="trunc"), grad=False)
    cmp = {"equal": "eq", "not_equal": "ne", "greater": "gt", "greater_equal": "ge", "less": "lt",
           "less_equal": "le", "logical_and": "logical_and", "logical_or": "logical_or",
           "logical_xor": "logical_xor"}
    for op, f in cmp.items():
        t[op] = E("torch." + f, lambda M, I, p, f=f: getattr(M, f)(I["a"], I["b"]), grad=False)
    for op in ("logical_not", "isnan", "isinf", "isfinite"):
        t[op] = E("torch." + op, lambda M, I, p, f=op: getattr(M, f)(I["x"]), grad=False)
    # activations
    f = "torch.nn.functional."
    t["relu"] = E(f + "relu", lambda M, I, p: F(M).relu(I["x"]))
    t["prelu"] = E(f + "prelu", lambda M, I, p: F(M).prelu(I["x"], I["alpha"]))
    t["leaky_relu"] = E(f + "leaky_relu", lambda M, I, p: F(M).leaky_relu(I["x"], p.f("alpha")))
    t["elu"] = E(f + "elu", lambda M, I, p: F(M).elu(I["x"], p.f("alpha")))
    t["selu"] = E(f + "selu", lambda M, I, p: F(M).selu(I["x"]))
    t["gelu"] = E(f + "gelu", lambda M, I, p: F(M).gelu(I["x"]))
    t["gelu_tanh"] = E(f + "gelu(approximate='tanh')", lambda M, I, p: F(M).gelu(I["x"], approximate="tanh"))
    t["silu"] = E(f + "silu", lambda M, I, p: F(M).silu(I["x"]))
    t["mish"] = E(f + "mish", lambda M, I, p: F(M).mish(I["x"]))
    t["log_sigmoid"] = E(f + "logsigmoid", lambda M, I, p: F(M).logsigmoid(I["x"]))
    t["softplus"] = E(f + "softplus", lambda M, I, p: F(M).softplus(I["x"], p.f("beta"), p.f("threshold")))
    t["softsign"] = E(f + "softsign", lambda M, I, p: F(M).softsign(I["x"]))
    t["softmax"] = E(f + "softmax", lambda M, I, p: F(M).softmax(I["x"], p.i("axis")))
    t["log_softmax"] = E(f + "log_softmax", lambda M, I, p: F(M).log_softmax(I["x"], p.i("axis")))
    t["softmin"] = E(f + "softmin", lambda M, I, p: F(M).softmin(I["x"], p.i("axis")))
    t["hard_sigmoid"] = NoEq("torch's hardsigmoid fixes alpha = 1/6 (opperf/MXNet/ONNX: alpha 0.2, beta 0.5)")
    t["masked_softmax"] = NoEq("torch has no masked softmax (it takes masked_fill + softmax, two operators)")
    t["masked_log_softmax"] = NoEq("torch has no masked log_softmax (masked_fill + log_softmax, two operators)")
    # reductions
    for op, name in (("sum", "sum"), ("mean", "mean"), ("max", "amax"), ("min", "amin"), ("nansum", "nansum")):
        t[op] = E("torch." + name, t_red(name))
    for op, name in (("prod", "prod"), ("argmax", "argmax"), ("argmin", "argmin"), ("all", "all"),
                     ("any", "any"), ("logsumexp", "logsumexp")):
        t[op] = E("torch." + name, t_red1(name), grad=op in ("prod", "logsumexp"))
    t["nanprod"] = NoEq("torch has no nanprod")
    t["norm"] = E("torch.linalg.vector_norm", lambda M, I, p: M.linalg.vector_norm(
        I["x"], 1 if p.s("ord") == "l1" else 2, dim=_dims(I["x"], p.axis("axis")), keepdim=p.b("keepdims")))
    t["var"] = E("torch.var", t_var("var"))
    t["std"] = E("torch.std", t_var("std"))
    t["cumsum"] = E("torch.cumsum", t_scan("cumsum"))
    t["cumprod"] = E("torch.cumprod", t_scan("cumprod"))
    # sort and search
    t["sort"] = E("torch.sort", t_sort(0))
    t["argsort"] = E("torch.sort(stable=True).indices", t_sort(1), grad=False)
    t["topk"] = E("torch.topk", lambda M, I, p: M.topk(I["x"], p.i("k"), p.axis("axis"), p.b("largest"), True))
    t["searchsorted"] = E("torch.searchsorted", lambda M, I, p: M.searchsorted(
        I["sorted"], I["values"], right=p.s("side") == "right"), grad=False)
    t["unique"] = NoEq("opperf's unique writes fixed-size outputs with a count; torch.unique returns variable-size tensors")
    # linalg
    t["dot"] = E("torch.matmul", lambda M, I, p: M.matmul(op_t(I["a"], p.b("transpose_a")), op_t(I["b"], p.b("transpose_b"))))
    t["batch_dot"] = E("torch.bmm", lambda M, I, p: M.bmm(op_t(I["a"], p.b("transpose_a")), op_t(I["b"], p.b("transpose_b"))))
    t["linalg_gemm"] = E("torch.addmm", lambda M, I, p: M.addmm(
        I["c"], op_t(I["a"], p.b("transpose_a")), op_t(I["b"], p.b("transpose_b")), beta=p.f("beta"), alpha=p.f("alpha")))
    t["gemv"] = E("torch.mv", lambda M, I, p: M.mv(I["a"], I["x"]))
    t["outer"] = E("torch.outer", lambda M, I, p: M.outer(I["x"], I["y"]))
    t["potrf"] = E("torch.linalg.cholesky", lambda M, I, p: M.linalg.cholesky(I["a"]),
                   nograd="torch's cholesky backward symmetrises the gradient over both triangles; "
                          "opperf's potrf reads and differentiates the lower triangle only (found by --check)")
    t["potri"] = E("torch.cholesky_inverse", lambda M, I, p: M.cholesky_inverse(I["a"].tril()))
    t["inverse"] = E("torch.linalg.inv", lambda M, I, p: M.linalg.inv(I["a"]))
    t["det"] = E("torch.linalg.det", lambda M, I, p: M.linalg.det(I["a"]))
    t["slogdet"] = E("torch.linalg.slogdet", lambda M, I, p: tuple(M.linalg.slogdet(I["a"])))
    t["extractdiag"] = E("torch.diagonal", lambda M, I, p: M.diagonal(I["a"], p.i("k")).clone())
    t["makediag"] = E("torch.diag", lambda M, I, p: M.diag(I["v"], p.i("k")))
    t["diag"] = E("torch.diag", lambda M, I, p: M.diag(I["x"], p.i("k")))
    t["trsm"] = E("torch.linalg.solve_triangular", t_trsm)
    t["trmm"] = NoEq("torch has no triangular matrix product (TRMM); a dense matmul does twice the work")
    t["syrk"] = NoEq("torch has no symmetric rank-k product (SYRK); a @ a.T does twice the work")
    t["khatri_rao"] = NoEq("torch has no Khatri-Rao product")
    # shape
    t["reshape"] = E("torch.reshape + clone", lambda M, I, p: I["x"].reshape(p.lst("shape")).clone())
    t["flatten"] = E("torch.flatten + clone", lambda M, I, p: I["x"].reshape(
        math.prod(I["x"].shape[:p.axis("axis")]), -1).clone())
    t["expand_dims"] = E("torch.unsqueeze + clone", lambda M, I, p: I["x"].unsqueeze(p.axis("axis")).clone())
    t["squeeze"] = E("torch.squeeze + clone", lambda M, I, p: (I["x"].squeeze() if p.axis("axis") is None
                                                               else I["x"].squeeze(p.axis("axis"))).clone())
    t["broadcast_to"] = E("torch.broadcast_to + contiguous", lambda M, I, p: M.broadcast_to(I["x"], p.lst("shape")).contiguous())
    t["tile"] = E("torch.tile", lambda M, I, p: M.tile(I["x"], p.lst("reps")))
    t["repeat"] = E("torch.repeat_interleave", lambda M, I, p: M.repeat_interleave(
        I["x"].reshape(-1) if p.axis("axis") is None else I["x"], p.i("repeats"), 0 if p.axis("axis") is None else p.axis("axis")))
    t["flip"] = E("torch.flip", lambda M, I, p: M.flip(I["x"], list(_dims(I["x"], p.axis("axis")))))
    t["roll"] = E("torch.roll", lambda M, I, p: M.roll(I["x"], p.lst("shift") * (
        len(p.lst("axis")) if len(p.lst("shift")) == 1 and p.lst("axis") else 1), p.lst("axis") or None))
    t["pad"] = E("torch.nn.functional.pad", t_pad)
    t["transpose"] = E("torch.permute + contiguous", t_transpose)
    t["swapaxes"] = E("torch.swapaxes + contiguous", lambda M, I, p: M.swapaxes(I["x"], p.axis("axis1"), p.axis("axis2")).contiguous())
    t["depth_to_space"] = E("torch.nn.functional.pixel_shuffle (crd) / reshape+permute (dcr)",
                            lambda M, I, p: d2s(M, I["x"], p.i("block"), p.s("mode"), False))
    t["space_to_depth"] = E("torch.nn.functional.pixel_unshuffle (crd) / reshape+permute (dcr)",
                            lambda M, I, p: d2s(M, I["x"], p.i("block"), p.s("mode"), True))
    t["contiguous"] = E("torch.Tensor.contiguous", t_contig, grad=False)
    t["copy"] = E("torch.clone", lambda M, I, p: I["x"].clone())
    t["cast"] = E("torch.Tensor.to", lambda M, I, p: I["x"].to(getattr(M, p.s("to"))), grad=False)
    # join
    t["concat"] = E("torch.cat", lambda M, I, p: M.cat([I[k] for k in "abcd" if I.get(k) is not None], p.axis("axis")))
    t["stack"] = E("torch.stack", lambda M, I, p: M.stack([I[k] for k in "abcd" if I.get(k) is not None], p.axis("axis")))
    t["split"] = E("torch.split", lambda M, I, p: t_split(M, I, p, I["x"].shape[p.axis("axis") or 0] // p.i("sections")))
    t["split_sections"] = E("torch.split", split_sections)
    # indexing
    t["take"] = E("torch.index_select", t_take)
    t["pick"] = E("torch.gather", lambda M, I, p: (lambda ax: M.gather(I["x"], ax, I["indices"].unsqueeze(ax))
                                                    if p.b("keepdims") else M.gather(I["x"], ax, I["indices"].unsqueeze(ax)).squeeze(ax))(
        p.axis("axis") % I["x"].dim()))
    t["batch_take"] = E("torch.gather", lambda M, I, p: M.gather(I["x"], 1, I["indices"].unsqueeze(1)).squeeze(1))
    t["gather_nd"] = E("torch.Tensor.__getitem__ (advanced indexing)", lambda M, I, p: I["x"][tuple(I["indices"])])
    t["scatter_nd"] = E("torch.Tensor.index_put_(accumulate=True)", lambda M, I, p: M.zeros(
        p.lst("shape"), dtype=I["values"].dtype).index_put_(tuple(I["indices"]), I["values"], accumulate=True))
    t["index_add"] = E("torch.index_add", lambda M, I, p: M.index_add(I["x"], p.axis("axis"), I["indices"], I["values"]))
    t["one_hot"] = E("torch.nn.functional.one_hot", lambda M, I, p: one_hot(M, I, p))
    t["where"] = E("torch.where", lambda M, I, p: M.where(I["condition"], I["x"], I["y"]))
    t["slice"] = E("torch.Tensor.__getitem__ + clone", t_slice)
    t["strided_slice"] = E("torch.Tensor.__getitem__ + clone", t_slice)
    t["slice_axis"] = E("torch.narrow + clone", lambda M, I, p: I["x"][(slice(None),) * (p.axis("axis") % I["x"].dim())
                                                                       + (slice(p.i("begin"), p.i("end")),)].clone())
    t["getitem"] = E("torch.Tensor.__getitem__ + clone", lambda M, I, p: I["x"][p.i("index")].clone())
    t["setitem"] = E("torch.Tensor.__setitem__", lambda M, I, p: setitem(I, p), grad=False)
    t["boolean_mask"] = NoEq("opperf's boolean_mask writes a fixed-size output with a count; torch's masked_select/indexing returns a variable-size tensor")
    t["ravel_multi_index"] = NoEq("torch 1.13 has no ravel_multi_index")
    t["unravel_index"] = NoEq("torch 1.13 has no unravel_index")
    # nn
    t["conv1d"] = E(f + "conv1d", conv(1))
    for op in ("conv2d", "grouped_conv2d", "dilated_conv2d", "depthwise_conv2d"):
        t[op] = E(f + "conv2d", conv(2))
    t["conv3d"] = E(f + "conv3d", conv(3))
    t["conv1d_transpose"] = E(f + "conv_transpose1d", conv(1, True))
    t["conv2d_transpose"] = E(f + "conv_transpose2d", conv(2, True))
    t["conv3d_transpose"] = E(f + "conv_transpose3d", conv(3, True))
    t["conv2d_bias_relu"] = E(f + "conv2d + relu", conv(2, post=lambda M, I, p, y: F(M).relu(y)))
    t["conv2d_batch_norm"] = E(f + "conv2d + batch_norm", conv(2, post=bn_post(False)))
    t["conv2d_batch_norm_relu"] = E(f + "conv2d + batch_norm + relu", conv(2, post=bn_post(True)))
    t["dense"] = E(f + "linear", t_dense(False))
    t["dense_relu"] = E(f + "linear + relu", t_dense(True))
    t["bias_gelu"] = E(f + "gelu(x + bias)", lambda M, I, p: F(M).gelu(I["x"] + I["bias"]))
    for nd in (1, 2, 3):
        for kind in ("max", "avg", "sum"):
            name = f + ("avg_pool%dd" % nd if kind != "max" else "max_pool%dd" % nd)
            t["%s_pool%dd" % (kind, nd)] = E(name + (" (x kernel size)" if kind == "sum" else ""), pool(nd, kind))
        for kind in ("max", "avg"):
            t["global_%s_pool%dd" % (kind, nd)] = E("torch.amax" if kind == "max" else "torch.mean", gpool(nd, kind))
    t["adaptive_avg_pool2d"] = E(f + "adaptive_avg_pool2d", lambda M, I, p: (lambda xv: xv[1](F(M).adaptive_avg_pool2d(
        xv[0], p.lst("output_size") * (2 // len(p.lst("output_size"))))))(chlast(M, I["x"], p.s("layout"), 2)))
    t["upsample_nearest"] = E(f + "interpolate(mode='nearest')", lambda M, I, p: resize(M, I, p, "nearest"))
    t["upsample_bilinear"] = E(f + "interpolate(mode='bilinear')", lambda M, I, p: resize(M, I, p, "bilinear"))
    t["im2col"] = E(f + "unfold", lambda M, I, p: unfold(M, I, p, False))
    t["col2im"] = E(f + "fold", lambda M, I, p: unfold(M, I, p, True))
    t["batch_norm"] = E(f + "batch_norm", lambda M, I, p: batch_norm_check(I, p) or F(M).batch_norm(
        I["x"], I["running_mean"], I["running_var"], I["gamma"], I["beta"], p.s("mode") == "train", p.f("momentum"), p.f("eps")),
        nograd=None)
    t["layer_norm"] = E(f + "layer_norm", lambda M, I, p: F(M).layer_norm(
        I["x"], I["x"].shape[I["x"].dim() - p.i("axes"):], I["gamma"], I["beta"], p.f("eps")))
    t["instance_norm"] = E(f + "instance_norm", lambda M, I, p: F(M).instance_norm(
        I["x"], weight=I["gamma"], bias=I["beta"], eps=p.f("eps")))
    t["group_norm"] = E(f + "group_norm", lambda M, I, p: F(M).group_norm(I["x"], p.i("groups"), I["gamma"], I["beta"], p.f("eps")))
    t["lrn"] = E(f + "local_response_norm", lambda M, I, p: F(M).local_response_norm(
        I["x"], p.i("nsize"), p.f("alpha"), p.f("beta"), p.f("k")))
    t["l2_normalization"] = NoEq("torch's normalize divides by max(norm, eps), MXNet's L2Normalization by sqrt(sum x^2 + eps), per instance/channel/spatial")
    t["embedding"] = E(f + "embedding", lambda M, I, p: F(M).embedding(I["indices"], I["weight"]))
    t["dropout"] = E(f + "dropout", lambda M, I, p: F(M).dropout(I["x"], p.f("p"), p.s("mode") == "train"),
                     nocheck=RAND)
    t["roi_pooling"] = NoEq("ROI pooling lives in torchvision (not installed), not in torch")
    t["lstm_cell"] = E("torch.lstm_cell", t_cell("lstm"))
    t["gru_cell"] = E("torch.gru_cell", t_cell("gru"))
    t["rnn_tanh_cell"] = E("torch.rnn_tanh_cell", t_cell("tanh"))
    t["rnn_relu_cell"] = E("torch.rnn_relu_cell", t_cell("relu"))
    for op in ("lstm", "gru", "rnn_tanh", "rnn_relu"):
        t[op] = NoEq("opperf packs the layer's weights MXNet/cuDNN-style in one tensor; torch's %s takes per-layer weight lists (not translated)" % op)
    # losses
    t["l1_loss"] = E(f + "l1_loss", lambda M, I, p: F(M).l1_loss(I["pred"], I["target"], reduction=p.s("reduction")))
    t["mse_loss"] = E(f + "mse_loss", lambda M, I, p: F(M).mse_loss(I["pred"], I["target"], reduction=p.s("reduction")))
    t["smooth_l1_loss"] = E(f + "smooth_l1_loss", lambda M, I, p: F(M).smooth_l1_loss(
        I["pred"], I["target"], reduction=p.s("reduction"), beta=p.f("beta")))
    t["huber_loss"] = E(f + "huber_loss", lambda M, I, p: F(M).huber_loss(
        I["pred"], I["target"], reduction=p.s("reduction"), delta=p.f("delta")))
    t["softmax_cross_entropy"] = E(f + "cross_entropy", lambda M, I, p: F(M).cross_entropy(
        I["logits"], I["labels"], reduction=p.s("reduction")))
    t["nll_loss"] = E(f + "nll_loss", lambda M, I, p: F(M).nll_loss(
        I["x"], I["labels"], ignore_index=p.i("ignore_index"), reduction=p.s("reduction")))
    t["kl_div"] = E(f + "kl_div", lambda M, I, p: F(M).kl_div(
        I["x"], I["target"], reduction=p.s("reduction"), log_target=p.b("log_target")))
    t["poisson_nll_loss"] = E(f + "poisson_nll_loss", lambda M, I, p: F(M).poisson_nll_loss(
        I["pred"], I["target"], log_input=p.b("log_input"), full=p.b("full"), eps=p.f("eps"), reduction=p.s("reduction")))
    t["sigmoid_binary_cross_entropy"] = E(f + "binary_cross_entropy_with_logits", lambda M, I, p:
                                          F(M).binary_cross_entropy_with_logits(I["logits"], I["target"], reduction=p.s("reduction")))
    t["logistic_loss"] = E(f + "soft_margin_loss", lambda M, I, p: F(M).soft_margin_loss(
        I["pred"], I["labels"], reduction=p.s("reduction")))
    t["cosine_embedding_loss"] = E(f + "cosine_embedding_loss", lambda M, I, p: F(M).cosine_embedding_loss(
        I["x1"], I["x2"], I["labels"], margin=p.f("margin"), reduction=p.s("reduction")))
    t["triplet_loss"] = E(f + "triplet_margin_loss", lambda M, I, p: F(M).triplet_margin_loss(
        I["anchor"], I["positive"], I["negative"], margin=p.f("margin"), p=p.f("p"), eps=p.f("eps"),
        swap=p.b("swap"), reduction=p.s("reduction")))
    t["ctc_loss"] = E(f + "ctc_loss", lambda M, I, p: F(M).ctc_loss(
        I["log_probs"], I["targets"], I["input_lengths"], I["target_lengths"], blank=p.i("blank"),
        reduction=p.s("reduction"), zero_infinity=p.b("zero_infinity")),
        nograd="torch's ctc_loss backward returns the gradient through a log_softmax it assumes "
               "produced log_probs, not the gradient w.r.t. log_probs (found by --check)")
    t["hinge_loss"] = NoEq("torch has no binary hinge loss (hinge_embedding_loss and multi_margin_loss compute other functions)")
    t["squared_hinge_loss"] = NoEq("torch has no squared binary hinge loss")
    # creation and random
    for op in ("zeros", "ones", "empty", "full", "arange", "linspace", "eye", "zeros_like", "ones_like", "full_like"):
        t[op] = E("torch." + op, t_creation(op), grad=False, nocheck="uninitialised values" if op == "empty" else None)
    for op, name in (("uniform", "Tensor.uniform_"), ("normal", "Tensor.normal_"), ("exponential", "Tensor.exponential_"),
                     ("bernoulli", "Tensor.bernoulli_"), ("randint", "randint"), ("poisson", "poisson"),
                     ("random_gamma", "_standard_gamma"), ("dropout_mask", "Tensor.bernoulli_ / (1-p)"),
                     ("multinomial", "multinomial"), ("shuffle", "randperm + index")):
        t[op] = E("torch." + name, t_rand(op), grad=False, nocheck=RAND)
    t["negative_binomial"] = NoEq("torch has no negative binomial sampler outside torch.distributions (gamma-poisson mixture, two operators)")
    # MXNet-specific semantics
    for op in ("sgd", "sgd_momentum", "nag", "adam", "adamw", "lamb", "adagrad", "rmsprop", "rmsprop_centered", "ftrl"):
        t[op] = NoEq("MXNet update semantics (rescale_grad, clip_gradient, weight decay folded into the gradient) differ from torch.optim")
    for op in ("sequence_mask", "sequence_last", "sequence_reverse"):
        t[op] = NoEq("MXNet Sequence* operator: no torch equivalent")
    return t


def batch_norm_check(I, p):
    x = I["x"]
    if p.s("mode") == "train" and x.numel() == x.shape[1]:
        raise Unsupported("torch's training batch_norm needs more than one value per channel")


def one_hot(M, I, p):
    y = F(M).one_hot(I["indices"], p.i("depth")).to(I["__dtype"])
    on, off = p.f("on_value"), p.f("off_value")
    return y if (on, off) == (1.0, 0.0) else y * (on - off) + off


def setitem(I, p):
    I["x"][p.i("index")] = I["v"]
    return I["x"]


def resize(M, I, p, mode):
    x, und = chlast(M, I["x"], p.s("layout"), 2)
    size = p.lst("size")
    kw = dict(size=size * (2 // len(size))) if size else dict(scale_factor=p.f("scale"))
    if mode == "bilinear":
        kw["align_corners"] = p.b("align_corners")
    return und(F(M).interpolate(x, mode=mode, **kw))


def unfold(M, I, p, fold):
    k = p.lst("kernel")
    if len(k) != 2 or I["x"].dim() != (3 if fold else 4):
        raise Unsupported("torch's unfold/fold are 2-D only")
    two = lambda v: v * 2 if len(v) == 1 else v
    kw = dict(kernel_size=k, dilation=two(p.lst("dilate")), padding=two(p.lst("pad")), stride=two(p.lst("stride")))
    if fold:
        return F(M).fold(I["x"], two(p.lst("output_size")), **kw)
    return F(M).unfold(I["x"], **kw)


def numpy_table():
    t = {}
    un = {"abs": "abs", "negative": "negative", "sign": "sign", "square": "square", "sqrt": "sqrt",
          "reciprocal": "reciprocal", "degrees": "degrees", "radians": "radians", "exp": "exp",
          "expm1": "expm1", "log": "log", "log1p": "log1p", "log2": "log2", "log10": "log10",
          "sin": "sin", "cos": "cos", "tan": "tan", "arcsin": "arcsin", "arccos": "arccos",
          "arctan": "arctan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "arcsinh": "arcsinh",
          "arccosh": "arccosh", "arctanh": "arctanh", "cbrt": "cbrt", "rint": "rint", "fix": "fix",
          "trunc": "trunc", "floor": "floor", "ceil": "ceil", "logical_not": "logical_not",
          "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite"}
    for op, f in un.items():
        t[op] = E("numpy." + f, lambda M, I, p, f=f: getattr(M, f)(I["x"]))
    t["clip"] = E("numpy.clip", _clip_np)
    t["clamp"] = E("numpy.clip", _clip_np)
    bi = {"add": "add", "sub": "subtract", "mul": "multiply", "mod": "mod", "pow": "power",
          "maximum": "maximum", "minimum": "minimum", "hypot": "hypot", "atan2": "arctan2",
          "equal": "equal", "not_equal": "not_equal", "greater": "greater", "greater_equal": "greater_equal",
          "less": "less", "less_equal": "less_equal", "logical_and": "logical_and",
          "logical_or": "logical_or", "logical_xor": "logical_xor"}
    for op, f in bi.items():
        t[op] = E("numpy." + f, lambda M, I, p, f=f: getattr(M, f)(I["a"], I["b"]))
    t["div"] = E("numpy.divide", lambda M, I, p: M.divide(I["a"], I["b"]) if I["a"].dtype.kind == "f"
                 else (M.trunc(I["a"] / I["b"])).astype(I["a"].dtype))
    for op, f in (("iadd", "add"), ("isub", "subtract"), ("imul", "multiply"), ("imod", "mod")):
        t[op] = E("numpy.%s(out=a)" % f, lambda M, I, p, f=f: getattr(M, f)(I["a"], I["b"], out=I["a"]))
    for op, name in (("sum", "sum"), ("mean", "mean"), ("max", "amax"), ("min", "amin"), ("prod", "prod"),
                     ("nansum", "nansum"), ("nanprod", "nanprod"), ("all", "all"), ("any", "any")):
        t[op] = E("numpy." + name, n_red(name))
    t["argmax"] = E("numpy.argmax", lambda M, I, p: M.argmax(I["x"], axis=p.axis("axis"), keepdims=p.b("keepdims")))
    t["argmin"] = E("numpy.argmin", lambda M, I, p: M.argmin(I["x"], axis=p.axis("axis"), keepdims=p.b("keepdims")))
    t["var"] = E("numpy.var", lambda M, I, p: M.var(I["x"], axis=p.axis("axis"), ddof=p.i("ddof"), keepdims=p.b("keepdims")))
    t["std"] = E("numpy.std", lambda M, I, p: M.std(I["x"], axis=p.axis("axis"), ddof=p.i("ddof"), keepdims=p.b("keepdims")))
    t["cumsum"] = E("numpy.cumsum", lambda M, I, p: M.cumsum(I["x"], axis=p.axis("axis")))
    t["cumprod"] = E("numpy.cumprod", lambda M, I, p: M.cumprod(I["x"], axis=p.axis("axis")))
    t["sort"] = E("numpy.sort(kind='stable')", lambda M, I, p: (lambda y: M.flip(y, p.axis("axis")) if p.b("descending") else y)(
        M.sort(I["x"], axis=p.axis("axis"), kind="stable")))
    t["searchsorted"] = E("numpy.searchsorted", lambda M, I, p: M.searchsorted(I["sorted"], I["values"], side=p.s("side")))
    t["dot"] = E("numpy.matmul", lambda M, I, p: M.matmul(I["a"].T if p.b("transpose_a") else I["a"],
                                                          I["b"].T if p.b("transpose_b") else I["b"]))
    t["batch_dot"] = E("numpy.matmul", lambda M, I, p: M.matmul(M.swapaxes(I["a"], 1, 2) if p.b("transpose_a") else I["a"],
                                                                M.swapaxes(I["b"], 1, 2) if p.b("transpose_b") else I["b"]))
    t["gemv"] = E("numpy.dot", lambda M, I, p: M.dot(I["a"], I["x"]))
    t["outer"] = E("numpy.outer", lambda M, I, p: M.outer(I["x"], I["y"]))
    t["potrf"] = E("numpy.linalg.cholesky", lambda M, I, p: M.linalg.cholesky(I["a"]))
    t["inverse"] = E("numpy.linalg.inv", lambda M, I, p: M.linalg.inv(I["a"]))
    t["det"] = E("numpy.linalg.det", lambda M, I, p: M.linalg.det(I["a"]))
    t["slogdet"] = E("numpy.linalg.slogdet", lambda M, I, p: tuple(M.linalg.slogdet(I["a"])))
    t["diag"] = E("numpy.diag", lambda M, I, p: M.diag(I["x"], p.i("k")).copy())
    t["extractdiag"] = E("numpy.diagonal", lambda M, I, p: M.diagonal(I["a"], p.i("k")).copy())
    t["makediag"] = E("numpy.diag", lambda M, I, p: M.diag(I["v"], p.i("k")))
    t["copy"] = E("numpy.copy", lambda M, I, p: M.copy(I["x"]))
    t["cast"] = E("numpy.ndarray.astype", lambda M, I, p: I["x"].astype(p.s("to")))
    t["tile"] = E("numpy.tile", lambda M, I, p: M.tile(I["x"], p.lst("reps")))
    t["repeat"] = E("numpy.repeat", lambda M, I, p: M.repeat(I["x"], p.i("repeats"), axis=p.axis("axis")))
    t["flip"] = E("numpy.flip + copy", lambda M, I, p: M.flip(I["x"], p.axis("axis")).copy())
    t["roll"] = E("numpy.roll", lambda M, I, p: M.roll(I["x"], p.lst("shift"), tuple(p.lst("axis")) or None))
    t["concat"] = E("numpy.concatenate", lambda M, I, p: M.concatenate([I[k] for k in "abcd" if I.get(k) is not None], p.axis("axis")))
    t["stack"] = E("numpy.stack", lambda M, I, p: M.stack([I[k] for k in "abcd" if I.get(k) is not None], p.axis("axis")))
    t["take"] = E("numpy.take", lambda M, I, p: M.take(I["x"], I["indices"], axis=p.axis("axis")))
    t["where"] = E("numpy.where", lambda M, I, p: M.where(I["condition"], I["x"], I["y"]))
    t["ravel_multi_index"] = E("numpy.ravel_multi_index", lambda M, I, p: M.ravel_multi_index(tuple(I["coords"]), p.lst("shape")))
    t["unravel_index"] = E("numpy.unravel_index", lambda M, I, p: M.stack(M.unravel_index(I["indices"], p.lst("shape"))))
    t["zeros"] = E("numpy.zeros", lambda M, I, p: M.zeros(p.lst("shape"), dtype=I["__dtype"]))
    t["ones"] = E("numpy.ones", lambda M, I, p: M.ones(p.lst("shape"), dtype=I["__dtype"]))
    t["empty"] = E("numpy.empty", lambda M, I, p: M.empty(p.lst("shape"), dtype=I["__dtype"]), nocheck="uninitialised values")
    t["full"] = E("numpy.full", lambda M, I, p: M.full(p.lst("shape"), p.f("value"), dtype=I["__dtype"]))
    t["eye"] = E("numpy.eye", lambda M, I, p: M.eye(p.i("N"), None if p.i("M") < 0 else p.i("M"), p.i("k"), dtype=I["__dtype"]))
    return t


_TABLES = {}


def table(lib):
    if lib not in _TABLES:
        _TABLES[lib] = torch_table() if lib == "torch" else numpy_table()
    return _TABLES[lib]


def lookup(op, lib):
    e = table(lib).get(op)
    if e is None:
        return NoEq("not mapped to %s (no function with the same semantics is known to opperf's table)" % lib)
    return e


# ---------------------------------------------------------------- running a case
class Prepared:
    def __init__(self, case, lib, M, entry):
        import numpy as np
        self.case, self.lib, self.M, self.e = case, lib, M, entry
        self.p = P(case["params"])
        self.np = np
        I = {}
        for t in case["inputs"]:
            if not t["present"]:
                I[t["name"]] = None
                continue
            if "file" not in t:
                raise Unsupported("opperf could not write this input")
            a = np.load(t["file"])
            I[t["name"]] = M.from_numpy(a) if lib == "torch" else a
        I["__dtype"] = getattr(M, case["dtype"]) if lib == "torch" else np.dtype(case["dtype"])
        self.I = I
        self.inplace = any(o.get("inplace") for o in case["outputs"])
        self.in_ptrs = {v.data_ptr() for k, v in I.items() if lib == "torch" and k != "__dtype" and v is not None}
        self.diff = [t["name"] for t in case["inputs"] if t["present"] and t.get("diff")]
        self.gout = []
        for o in case["outputs"]:
            g = o.get("grad_file")
            self.gout.append(M.from_numpy(np.load(g)) if (g and lib == "torch") else None)

    def call(self, I):
        r = self.e.fn(self.M, I, self.p)
        r = r if isinstance(r, tuple) else (r,)
        if self.lib == "torch" and not self.inplace:
            # an output that aliases an input (x.to(same dtype), inference dropout, a split
            # view) is copied: opperf writes every output to its own memory
            ptrs = self.in_ptrs
            r = tuple(o.clone() if o.data_ptr() in ptrs else o for o in r)
        return r

    def fwd(self):
        # torch: answer_case times forward calls with autograd disabled around the whole loop
        # (inference, like opperf's fwd), not a no_grad context per call
        return lambda: self.call(self.I)

    def grad_setup(self):
        torch = self.M
        I = dict(self.I)
        leaves = []
        for n in self.diff:
            I[n] = I[n].detach().clone().requires_grad_(True)
            leaves.append(I[n])
        return I, leaves

    def outs_and_grads(self, outs):
        torch = self.M
        sel, gs = [], []
        for o, g in zip(outs, self.gout):
            if g is not None and o.requires_grad:
                sel.append(o)
                gs.append(g)
        if not sel:
            raise Unsupported("no differentiable output on the torch side")
        return sel, gs

    def timed(self, pas):
        if pas == "fwd":
            return self.fwd()
        torch = self.M
        I, leaves = self.grad_setup()
        # "materialize": false where opperf hands gradients back as views (its native
        # implementation of add, sum, concat, ...): autograd's own answer, views included
        mat = self.materialize if self.case.get("materialize", True) else (lambda grads, gouts: grads)
        if pas == "bwd":
            outs = self.call(I)
            sel, gs = self.outs_and_grads(outs)
            return lambda: mat(torch.autograd.grad(sel, leaves, gs, retain_graph=True, allow_unused=True), gs)

        def both():
            o = self.call(I)
            s, g = self.outs_and_grads(o)
            return mat(torch.autograd.grad(s, leaves, g, allow_unused=True), g)
        return both

    @staticmethod
    def materialize(grads, gouts):
        """Every input gradient in its own memory, as opperf writes it: autograd may answer
        with a broadcast view (sum's backward is gout.expand(...)) or with the output gradient
        itself (add's); without this the peer's bwd of such operators does no work at all."""
        ptrs = {g.data_ptr() for g in gouts}
        out = []
        for g in grads:
            if g is not None and not g.is_contiguous():
                g = g.contiguous()
            elif g is not None and g.data_ptr() in ptrs:
                g = g.clone()
            out.append(g)
        return out

    def write_outputs(self, case):
        """One call from the pristine inputs (before any timing), outputs and input gradients."""
        np = self.np
        pas = case["pass"]
        if pas == "fwd":
            outs = self.call(self.I) if self.lib == "numpy" else self.nograd(self.fwd())
            grads = []
        else:
            torch = self.M
            I, leaves = self.grad_setup()
            outs = self.call(I)
            sel, gs = self.outs_and_grads(outs)
            grads = torch.autograd.grad(sel, leaves, gs, allow_unused=True)
        for o, t in zip(outs, case["outputs"]):
            if t.get("peer_file"):
                np.save(t["peer_file"], self.to_np(o))
        gi = dict(zip(self.diff, grads))
        for t in case["inputs"]:
            if t.get("peer_grad_file") and gi.get(t["name"]) is not None:
                np.save(t["peer_grad_file"], self.to_np(gi[t["name"]]))
        # in-place operators changed their inputs: time them from the same state opperf did
        if any(t.get("inplace") for t in case["outputs"]):
            for t in case["inputs"]:
                if t["present"] and "file" in t:
                    a = np.load(t["file"])
                    self.I[t["name"]] = self.M.from_numpy(a) if self.lib == "torch" else a

    def nograd(self, fn):
        with self.M.no_grad():
            return fn()

    def to_np(self, o):
        np = self.np
        if self.lib == "torch":
            o = o.detach().contiguous().numpy()
        return np.asarray(o, order="C")


def prepare(case, lib, M, entry):
    return Prepared(case, lib, M, entry)
