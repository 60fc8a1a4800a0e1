"""Real users' code: library code people compile, written out inline (the libraries are not
installed here): torchvision's detection ops and transforms, nanoGPT, a U-Net, diffusers'
timestep handling and Euler scheduler, timm's DropPath, called the way their users call them.

Each case names the repository and file its code comes from; the code keeps the library's
own lines (shortened where a branch is for CUDA only). CPU, ``backend="eager"``.

Tried and left out: timm's ``drop_path`` called with a rate per block (floats are not
specialised on torch 2.13: no recompile). https://github.com/pytorch/pytorch/issues/138654 is
kept as posted although ``torch.cos(i)`` on an int raises in eager too.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import case

TV = "https://github.com/pytorch/vision/blob/main/torchvision/"
NANOGPT = "https://github.com/karpathy/nanoGPT/blob/master/model.py"


@case(TV + "ops/boxes.py (remove_small_boxes)")
def remove_small_boxes():
    def remove_small_boxes(boxes: torch.Tensor, min_size: float) -> torch.Tensor:
        ws, hs = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
        keep = (ws >= min_size) & (hs >= min_size)
        keep = torch.where(keep)[0]  # BREAK
        return keep

    boxes = torch.rand(20, 4) * 10
    boxes[:, 2:] += boxes[:, :2]
    return remove_small_boxes, [(boxes, 3.0)]


@case(TV + "ops/stochastic_depth.py (StochasticDepth, train then eval)")
def stochastic_depth_train_eval():
    def stochastic_depth(input, p: float, mode: str, training: bool = True):
        if p < 0.0 or p > 1.0:
            raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
        if mode not in ["batch", "row"]:
            raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
        if not training or p == 0.0:
            return input

        survival_rate = 1.0 - p
        if mode == "row":
            size = [input.shape[0]] + [1] * (input.ndim - 1)
        else:
            size = [1] * input.ndim
        noise = torch.empty(size, dtype=input.dtype, device=input.device)
        noise = noise.bernoulli_(survival_rate)
        if survival_rate > 0.0:
            noise.div_(survival_rate)
        return input * noise

    class StochasticDepth(nn.Module):
        def __init__(self, p: float, mode: str) -> None:
            super().__init__()
            self.p = p
            self.mode = mode

        def forward(self, input):
            return stochastic_depth(input, self.p, self.mode, self.training)

    block = nn.Sequential(nn.Linear(8, 8), StochasticDepth(0.2, "row"))
    x = torch.randn(4, 8)

    def train(m):
        block.train()
        return m(x)

    def evaluate(m):
        block.eval()
        return m(x)

    return block, [train, evaluate]


@case(TV + "models/detection/transform.py (_resize_image_and_masks: scale.item() per image size)")
def rcnn_transform_resize():
    def _resize_image_and_masks(image, self_min_size: float, self_max_size: float):
        im_shape = torch.tensor(image.shape[-2:])
        min_size = torch.min(im_shape).to(dtype=torch.float32)
        max_size = torch.max(im_shape).to(dtype=torch.float32)
        scale = torch.min(self_min_size / min_size, self_max_size / max_size)
        scale_factor = scale.item()  # BREAK
        recompute_scale_factor = True

        image = torch.nn.functional.interpolate(
            image[None],
            size=None,
            scale_factor=scale_factor,
            mode="bilinear",
            recompute_scale_factor=recompute_scale_factor,
            align_corners=False,
        )[0]
        return image

    return _resize_image_and_masks, [(torch.rand(3, h, w), 32.0, 64.0) for h, w in ((24, 40), (30, 30), (20, 50))]


@case("https://github.com/facebookresearch/detr/blob/main/hubconf.py (DETR's postprocess as its notebook does it)")
def detr_keep_confident():
    def postprocess(logits, boxes):
        probas = logits.softmax(-1)[0, :, :-1]
        keep = probas.max(-1).values > 0.7
        return probas[keep], boxes[0, keep]  # BREAK

    logits = torch.randn(1, 10, 5) * 3
    boxes = torch.rand(1, 10, 4)
    return postprocess, [(logits, boxes)]


@case("https://github.com/milesial/Pytorch-UNet/blob/master/unet/unet_parts.py (Up: pad to the skip's size, images of several sizes)")
def unet_up_pad():
    class DoubleConv(nn.Module):
        def __init__(self, in_channels, out_channels, mid_channels=None):
            super().__init__()
            if not mid_channels:
                mid_channels = out_channels
            self.double_conv = nn.Sequential(
                nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
                nn.BatchNorm2d(mid_channels),
                nn.ReLU(inplace=True),
                nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(inplace=True)
            )

        def forward(self, x):
            return self.double_conv(x)

    class Up(nn.Module):
        def __init__(self, in_channels, out_channels, bilinear=True):
            super().__init__()
            if bilinear:
                self.up = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True)
                self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
            else:
                self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
                self.conv = DoubleConv(in_channels, out_channels)

        def forward(self, x1, x2):
            x1 = self.up(x1)
            diffY = x2.size()[2] - x1.size()[2]
            diffX = x2.size()[3] - x1.size()[3]

            x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2,
                            diffY // 2, diffY - diffY // 2])
            x = torch.cat([x2, x1], dim=1)
            return self.conv(x)

    up = Up(8, 4).eval()

    def call(h, w):
        x2 = torch.randn(1, 4, h, w)
        x1 = torch.randn(1, 4, h // 2, w // 2)

        def run(m):
            with torch.no_grad():
                return m(x1, x2)
        return run

    return up, [call(16, 16), call(17, 20), call(23, 18)]


class _GPTConfig:
    block_size: int = 16
    vocab_size: int = 64
    n_layer: int = 1
    n_head: int = 2
    n_embd: int = 16
    dropout: float = 0.0
    bias: bool = True


def _nanogpt():
    """nanoGPT's model.py (CausalSelfAttention without flash attention, MLP, Block, GPT.forward, GPT.generate)."""

    class LayerNorm(nn.Module):
        def __init__(self, ndim, bias):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(ndim))
            self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

        def forward(self, input):
            return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)

    class CausalSelfAttention(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
            self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
            self.attn_dropout = nn.Dropout(config.dropout)
            self.resid_dropout = nn.Dropout(config.dropout)
            self.n_head = config.n_head
            self.n_embd = config.n_embd
            self.dropout = config.dropout
            self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                 .view(1, 1, config.block_size, config.block_size))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            y = self.resid_dropout(self.c_proj(y))
            return y

    class MLP(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
            self.dropout = nn.Dropout(config.dropout)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
            self.attn = CausalSelfAttention(config)
            self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
            self.mlp = MLP(config)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            x = x + self.mlp(self.ln_2(x))
            return x

    class GPT(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=LayerNorm(config.n_embd, bias=config.bias),
            ))
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight

        def forward(self, idx, targets=None):
            device = idx.device
            b, t = idx.size()
            assert t <= self.config.block_size, f"Cannot forward sequence of length {t}, block size is only {self.config.block_size}"
            pos = torch.arange(0, t, dtype=torch.long, device=device)
            tok_emb = self.transformer.wte(idx)
            pos_emb = self.transformer.wpe(pos)
            x = self.transformer.drop(tok_emb + pos_emb)
            for block in self.transformer.h:
                x = block(x)
            x = self.transformer.ln_f(x)
            if targets is not None:
                logits = self.lm_head(x)
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
            else:
                logits = self.lm_head(x[:, [-1], :])
                loss = None
            return logits, loss

    return GPT(_GPTConfig())


@case(NANOGPT + " (model = torch.compile(model), then GPT.generate's loop calls it per token)")
def nanogpt_generate_loop():
    model = _nanogpt().eval()
    idx0 = torch.zeros((1, 1), dtype=torch.long)

    @torch.no_grad()
    def generate(m, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= model.config.block_size else idx[:, -model.config.block_size:]
            logits, _ = m(idx_cond)
            logits = logits[:, -1, :] / temperature
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.argmax(probs, dim=-1, keepdim=True)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx

    return model, [lambda m: generate(m, idx0, 5)]


@case("https://github.com/karpathy/nanoGPT/blob/master/train.py (estimate_loss: model.eval() under no_grad, then model.train())")
def nanogpt_estimate_loss():
    model = _nanogpt()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    X = torch.randint(0, 64, (4, 16))
    Y = torch.randint(0, 64, (4, 16))

    def train_step(m):
        model.train()
        logits, loss = m(X, Y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    @torch.no_grad()
    def estimate_loss(m):
        model.eval()
        logits, loss = m(X, Y)
        model.train()
        return loss

    return model, [train_step, estimate_loss, train_step]


@case("https://github.com/huggingface/diffusers/blob/main/src/diffusers/models/unets/unet_2d_condition.py (a Python int timestep per step)")
def diffusers_int_timestep():
    def get_timestep_embedding(timesteps, embedding_dim, flip_sin_to_cos=False, downscale_freq_shift=1, scale=1, max_period=10000):
        assert len(timesteps.shape) == 1, "Timesteps should be a 1d-array"

        half_dim = embedding_dim // 2
        exponent = -math.log(max_period) * torch.arange(start=0, end=half_dim, dtype=torch.float32, device=timesteps.device)
        exponent = exponent / (half_dim - downscale_freq_shift)

        emb = torch.exp(exponent)
        emb = timesteps[:, None].float() * emb[None, :]
        emb = scale * emb
        emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
        if flip_sin_to_cos:
            emb = torch.cat([emb[:, half_dim:], emb[:, :half_dim]], dim=-1)
        return emb

    class TinyUNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.time_proj = nn.Linear(16, 8)
            self.conv = nn.Conv2d(4, 4, 3, padding=1)

        def forward(self, sample, timestep):
            timesteps = timestep
            if not torch.is_tensor(timesteps):
                is_mps = sample.device.type == "mps"
                if isinstance(timestep, float):
                    dtype = torch.float32 if is_mps else torch.float64
                else:
                    dtype = torch.int32 if is_mps else torch.int64
                timesteps = torch.tensor([timesteps], dtype=dtype, device=sample.device)
            elif len(timesteps.shape) == 0:
                timesteps = timesteps[None].to(sample.device)
            timesteps = timesteps.expand(sample.shape[0])
            emb = self.time_proj(get_timestep_embedding(timesteps, 16, True, 0))
            return self.conv(sample) + emb.mean()

    unet = TinyUNet().eval()
    sample = torch.randn(1, 4, 8, 8)
    return unet, [(sample, t) for t in (999, 899, 799, 699)]


@case("https://github.com/huggingface/diffusers/blob/main/src/diffusers/schedulers/scheduling_euler_discrete.py (step with _step_index, compiled)")
def diffusers_euler_step_index():
    class EulerDiscreteScheduler:
        def __init__(self, num_inference_steps):
            self.sigmas = torch.linspace(14.6, 0.0, num_inference_steps + 1)
            self._step_index = None

        @property
        def step_index(self):
            return self._step_index

        def _init_step_index(self, timestep):
            self._step_index = 0

        def step(self, model_output, timestep, sample):
            if self.step_index is None:
                self._init_step_index(timestep)
            sample = sample.to(torch.float32)
            sigma = self.sigmas[self.step_index]
            pred_original_sample = sample - sigma * model_output
            derivative = (sample - pred_original_sample) / sigma
            dt = self.sigmas[self.step_index + 1] - sigma
            prev_sample = sample + derivative * dt
            self._step_index += 1
            return prev_sample

    scheduler = EulerDiscreteScheduler(10)
    sample = torch.randn(1, 4, 8, 8)
    model_output = torch.randn(1, 4, 8, 8)

    def call(t):
        def run(step):
            return step(model_output, t, sample)
        return run

    return scheduler.step, [call(t) for t in range(10)]


@case("https://github.com/pytorch/pytorch/issues/138654")
def listcomp_disabled_forward():
    class Module(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self._num = 4

        @torch._dynamo.disable(recursive=False)
        def forward(self, x):
            values = [4 * torch.cos(i) for i in range(self._num)]  # BREAK
            return sum(values) * x

    mod = Module()

    def fn(x):
        return mod(x)  # BREAK

    return fn, [(torch.randn(4),)]


@case("https://github.com/pytorch/pytorch/pull/186472 (a ModuleList indexed by an attribute that changes between calls)")
def modulelist_index_attribute():
    class Stages(nn.Module):
        def __init__(self):
            super().__init__()
            self.stages = nn.ModuleList([nn.Linear(4, 4) for _ in range(4)])
            self._pos = 0

        def forward(self, x):
            out = self.stages[self._pos](x)
            self._pos = (self._pos + 1) % len(self.stages)
            return out

    x = torch.randn(2, 4)
    return Stages(), [(x,)] * 5


@case("https://github.com/lucidrains/vit-pytorch/blob/main/vit_pytorch/vit.py (an optional mask: None, then a tensor)")
def optional_mask_exists():
    def exists(val):
        return val is not None

    class Attention(nn.Module):
        def __init__(self, dim, heads=2):
            super().__init__()
            self.heads = heads
            self.scale = (dim // heads) ** -0.5
            self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
            self.to_out = nn.Linear(dim, dim)

        def forward(self, x, mask=None):
            b, n, d = x.shape
            q, k, v = self.to_qkv(x).chunk(3, dim=-1)
            q, k, v = (t.view(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
            dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale
            if exists(mask):
                dots = dots.masked_fill(~mask[:, None, None, :], -torch.finfo(dots.dtype).max)
            attn = dots.softmax(dim=-1)
            out = torch.matmul(attn, v).transpose(1, 2).reshape(b, n, d)
            return self.to_out(out)

    attn = Attention(8)
    x = torch.randn(2, 5, 8)
    mask = torch.ones(2, 5, dtype=torch.bool)
    mask[1, 3:] = False
    return attn, [(x,), (x, mask)]
