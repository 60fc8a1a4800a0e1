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


# -- more of the same libraries, called as their users call them --------------------------------
@case(TV + "models/detection/transform.py (batch_images: a list of images, its length changing)")
def rcnn_batch_images_list():
    def max_by_axis(the_list):
        maxes = the_list[0]
        for sublist in the_list[1:]:
            for index, item in enumerate(sublist):
                maxes[index] = max(maxes[index], item)
        return maxes

    def batch_images(images, size_divisible: int = 32):
        max_size = max_by_axis([list(img.shape) for img in images])
        stride = float(size_divisible)
        max_size = list(max_size)
        max_size[1] = int(math.ceil(float(max_size[1]) / stride) * stride)
        max_size[2] = int(math.ceil(float(max_size[2]) / stride) * stride)

        batch_shape = [len(images)] + max_size
        batched_imgs = images[0].new_full(batch_shape, 0)
        for i in range(batched_imgs.shape[0]):
            img = images[i]
            batched_imgs[i, : img.shape[0], : img.shape[1], : img.shape[2]].copy_(img)

        return batched_imgs

    return batch_images, [([torch.rand(3, 20, 30), torch.rand(3, 25, 18)],),
                          ([torch.rand(3, 20, 30), torch.rand(3, 25, 18), torch.rand(3, 10, 10)],)]


@case(TV + "ops/boxes.py (clip_boxes_to_image, images of several sizes)")
def clip_boxes_sizes():
    def clip_boxes_to_image(boxes, size):
        dim = boxes.dim()
        boxes_x = boxes[..., 0::2]
        boxes_y = boxes[..., 1::2]
        height, width = size

        boxes_x = boxes_x.clamp(min=0, max=width)
        boxes_y = boxes_y.clamp(min=0, max=height)

        clipped_boxes = torch.stack((boxes_x, boxes_y), dim=dim)
        return clipped_boxes.reshape(boxes.shape)

    boxes = torch.rand(6, 4) * 100
    return clip_boxes_to_image, [(boxes, (h, w)) for h, w in ((480, 640), (600, 800), (512, 512))]


@case(TV + "ops/boxes.py (box_iou on float boxes, then int boxes)")
def box_iou_dtype():
    def _upcast(t):
        if t.is_floating_point():
            return t if t.dtype in (torch.float32, torch.float64) else t.float()
        else:
            return t if t.dtype in (torch.int32, torch.int64) else t.int()

    def box_area(boxes):
        boxes = _upcast(boxes)
        return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])

    def _box_inter_union(boxes1, boxes2):
        area1 = box_area(boxes1)
        area2 = box_area(boxes2)

        lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
        rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])

        wh = _upcast(rb - lt).clamp(min=0)
        inter = wh[:, :, 0] * wh[:, :, 1]

        union = area1[:, None] + area2 - inter

        return inter, union

    def box_iou(boxes1, boxes2):
        inter, union = _box_inter_union(boxes1, boxes2)
        iou = inter / union
        return iou

    a = torch.tensor([[0, 0, 10, 10], [5, 5, 15, 15]])
    b = torch.tensor([[0, 0, 8, 8], [2, 2, 12, 12], [6, 6, 9, 9]])
    return box_iou, [(a.float(), b.float()), (a, b)]


@case("https://github.com/huggingface/diffusers/blob/main/src/diffusers/pipelines/stable_diffusion/pipeline_stable_diffusion.py (classifier-free guidance, guidance_scale a float)")
def diffusers_guidance_scale():
    unet = nn.Conv2d(4, 4, 3, padding=1)

    def guided_noise(latents, guidance_scale):
        latent_model_input = torch.cat([latents] * 2)
        noise_pred = unet(latent_model_input)
        noise_pred_uncond, noise_pred_text = noise_pred.chunk(2)
        noise_pred = noise_pred_uncond + guidance_scale * (noise_pred_text - noise_pred_uncond)
        return noise_pred

    latents = torch.randn(1, 4, 8, 8)
    return guided_noise, [(latents, g) for g in (7.5, 5.0, 3.0)]


@case(NANOGPT + " (crop_block_size, then a forward: the causal mask buffer's size changes)")
def nanogpt_crop_block_size():
    model = _nanogpt().eval()
    idx = torch.randint(0, 64, (1, 8))

    def crop_block_size(block_size):
        assert block_size <= model.config.block_size
        model.config.block_size = block_size
        model.transformer.wpe.weight = nn.Parameter(model.transformer.wpe.weight[:block_size])
        for block in model.transformer.h:
            if hasattr(block.attn, 'bias'):
                block.attn.bias = block.attn.bias[:, :, :block_size, :block_size]

    def before(m):
        with torch.no_grad():
            return m(idx)[0]

    def after(m):
        crop_block_size(12)
        with torch.no_grad():
            return m(idx)[0]

    return model, [before, after]


@case("https://github.com/karpathy/nanoGPT/blob/master/train.py (get_lr: the learning rate set on param_groups each iteration, step compiled)")
def nanogpt_get_lr_compiled_step():
    model = _nanogpt()
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4)
    learning_rate, warmup_iters, lr_decay_iters, min_lr = 6e-4, 2, 10, 6e-5

    def get_lr(it):
        if it < warmup_iters:
            return learning_rate * (it + 1) / (warmup_iters + 1)
        if it > lr_decay_iters:
            return min_lr
        decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
        coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
        return min_lr + coeff * (learning_rate - min_lr)

    X = torch.randint(0, 64, (2, 16))
    Y = torch.randint(0, 64, (2, 16))
    model(X, Y)[1].backward()

    def call(it):
        def run(step):
            lr = get_lr(it)
            for param_group in optimizer.param_groups:
                param_group['lr'] = lr
            step()
            return [p.detach().clone() for p in model.parameters()]
        return run

    return optimizer.step, [call(it) for it in range(3)]


@case("https://github.com/openai/whisper/blob/main/whisper/audio.py (pad_or_trim: audio clips of several lengths)")
def whisper_pad_or_trim():
    N_SAMPLES = 480

    def pad_or_trim(array, length: int = N_SAMPLES, *, axis: int = -1):
        if array.shape[axis] > length:
            array = array.index_select(dim=axis, index=torch.arange(length, device=array.device))

        if array.shape[axis] < length:
            pad_widths = [(0, 0)] * array.ndim
            pad_widths[axis] = (0, length - array.shape[axis])
            array = F.pad(array, [pad for sizes in pad_widths[::-1] for pad in sizes])

        return array

    return pad_or_trim, [(torch.randn(n),) for n in (300, 700, 410)]


@case("https://github.com/lucidrains/vit-pytorch/blob/main/vit_pytorch/vit.py (ViT: images of two sizes, the patch count changes)")
def vit_pytorch_image_sizes():
    class PatchEmbedViT(nn.Module):
        def __init__(self, patch=4, dim=16, num_patches=64):
            super().__init__()
            self.patch = patch
            self.to_patch_embedding = nn.Linear(3 * patch * patch, dim)
            self.pos_embedding = nn.Parameter(torch.randn(1, num_patches + 1, dim))
            self.cls_token = nn.Parameter(torch.randn(1, 1, dim))

        def forward(self, img):
            b, c, h, w = img.shape
            p = self.patch
            x = img.unfold(2, p, p).unfold(3, p, p).permute(0, 2, 3, 1, 4, 5).reshape(b, (h // p) * (w // p), c * p * p)
            x = self.to_patch_embedding(x)
            b, n, _ = x.shape
            cls_tokens = self.cls_token.expand(b, -1, -1)
            x = torch.cat((cls_tokens, x), dim=1)
            x += self.pos_embedding[:, :(n + 1)]
            return x.mean(dim=1)

    vit = PatchEmbedViT()
    return vit, [(torch.randn(2, 3, 16, 16),), (torch.randn(2, 3, 32, 32),)]


@case("https://github.com/pytorch/examples/blob/main/mnist/main.py (train then test: the last test batch is smaller)")
def mnist_example_last_batch():
    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, 1)
            self.dropout1 = nn.Dropout(0.25)
            self.fc1 = nn.Linear(4 * 13 * 13, 10)

        def forward(self, x):
            x = self.conv1(x)
            x = F.relu(x)
            x = F.max_pool2d(x, 2)
            x = self.dropout1(x)
            x = torch.flatten(x, 1)
            x = self.fc1(x)
            output = F.log_softmax(x, dim=1)
            return output

    model = Net().eval()

    def test_batch(n):
        data = torch.randn(n, 1, 28, 28)

        def run(m):
            with torch.no_grad():
                return m(data)
        return run

    return model, [test_batch(8), test_batch(8), test_batch(5)]


@case("https://github.com/pytorch/examples/blob/main/word_language_model/model.py (RNNModel with an init_hidden per batch)")
def word_language_model_hidden():
    class RNNModel(nn.Module):
        def __init__(self, ntoken, ninp, nhid, nlayers):
            super(RNNModel, self).__init__()
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnn = nn.LSTM(ninp, nhid, nlayers)
            self.decoder = nn.Linear(nhid, ntoken)
            self.nhid = nhid
            self.nlayers = nlayers

        def forward(self, input, hidden):
            emb = self.encoder(input)
            output, hidden = self.rnn(emb, hidden)
            decoded = self.decoder(output)
            return F.log_softmax(decoded.view(-1, decoded.size(-1)), dim=1), hidden

        def init_hidden(self, bsz):
            weight = next(self.parameters())
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))

    model = RNNModel(20, 8, 8, 1).eval()

    def batch(bptt):
        data = torch.randint(0, 20, (bptt, 2))

        def run(m):
            with torch.no_grad():
                return m(data, model.init_hidden(2))[0]
        return run

    return model, [batch(5), batch(3)]


@case(TV + "ops/boxes.py (masks_to_boxes)")
def masks_to_boxes():
    def masks_to_boxes(masks: torch.Tensor) -> torch.Tensor:
        if masks.numel() == 0:
            return torch.zeros((0, 4), device=masks.device, dtype=torch.float)

        n = masks.shape[0]

        bounding_boxes = torch.zeros((n, 4), device=masks.device, dtype=torch.float)

        for index, mask in enumerate(masks):
            y, x = torch.where(mask != 0)  # BREAK

            bounding_boxes[index, 0] = torch.min(x)
            bounding_boxes[index, 1] = torch.min(y)
            bounding_boxes[index, 2] = torch.max(x)
            bounding_boxes[index, 3] = torch.max(y)

        return bounding_boxes

    masks = torch.zeros(2, 8, 8)
    masks[0, 2:5, 1:4] = 1
    masks[1, 4:7, 3:8] = 1
    return masks_to_boxes, [(masks,)]


@case(TV + "ops/focal_loss.py (sigmoid_focal_loss, reduction 'mean' then 'sum')")
def focal_loss_reduction():
    def sigmoid_focal_loss(inputs, targets, alpha: float = 0.25, gamma: float = 2, reduction: str = "none"):
        p = torch.sigmoid(inputs)
        ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
        p_t = p * targets + (1 - p) * (1 - targets)
        loss = ce_loss * ((1 - p_t) ** gamma)

        if alpha >= 0:
            alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
            loss = alpha_t * loss

        if reduction == "none":
            pass
        elif reduction == "mean":
            loss = loss.mean()
        elif reduction == "sum":
            loss = loss.sum()
        else:
            raise ValueError(
                f"Invalid Value for arg 'reduction': '{reduction} \n Supported reduction modes: 'none', 'mean', 'sum'"
            )
        return loss

    inputs = torch.randn(6, 3)
    targets = (torch.rand(6, 3) > 0.5).float()
    return sigmoid_focal_loss, [(inputs, targets, 0.25, 2, "mean"), (inputs, targets, 0.25, 2, "sum")]


@case("https://github.com/pytorch/examples/blob/main/reinforcement_learning/reinforce.py (select_action compiled)")
def reinforce_select_action():
    from torch.distributions import Categorical

    class Policy(nn.Module):
        def __init__(self):
            super(Policy, self).__init__()
            self.affine1 = nn.Linear(4, 16)
            self.dropout = nn.Dropout(p=0.6)
            self.affine2 = nn.Linear(16, 2)

            self.saved_log_probs = []
            self.rewards = []

        def forward(self, x):
            x = self.affine1(x)
            x = self.dropout(x)
            x = F.relu(x)
            action_scores = self.affine2(x)
            return F.softmax(action_scores, dim=1)

    policy = Policy().eval()

    def select_action(state):
        state = state.float().unsqueeze(0)
        probs = policy(state)
        m = Categorical(probs)
        action = m.sample()
        policy.saved_log_probs.append(m.log_prob(action))
        return action.item()  # BREAK

    return select_action, [(torch.randn(4),)]


@case("https://github.com/pytorch/examples/blob/main/imagenet/main.py (accuracy(): the last batch is smaller)")
def imagenet_accuracy_last_batch():
    def accuracy(output, target, topk=(1,)):
        with torch.no_grad():
            maxk = max(topk)
            batch_size = target.size(0)

            _, pred = output.topk(maxk, 1, True, True)
            pred = pred.t()
            correct = pred.eq(target.view(1, -1).expand_as(pred))

            res = []
            for k in topk:
                correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
                res.append(correct_k.mul_(100.0 / batch_size))
            return res

    def batch(n):
        return (torch.randn(n, 10), torch.randint(0, 10, (n,)), (1, 5))

    return accuracy, [batch(16), batch(16), batch(7)]


@case("https://github.com/ultralytics/yolov5/blob/master/utils/general.py (non_max_suppression: candidates above conf_thres per image)")
def yolov5_nms_candidates():
    def xywh2xyxy(x):
        y = x.clone()
        y[..., 0] = x[..., 0] - x[..., 2] / 2
        y[..., 1] = x[..., 1] - x[..., 3] / 2
        y[..., 2] = x[..., 0] + x[..., 2] / 2
        y[..., 3] = x[..., 1] + x[..., 3] / 2
        return y

    def candidates(prediction, conf_thres=0.25):
        bs = prediction.shape[0]
        xc = prediction[..., 4] > conf_thres
        output = [torch.zeros((0, 6), device=prediction.device)] * bs
        for xi, x in enumerate(prediction):
            x = x[xc[xi]]  # BREAK
            if not x.shape[0]:
                continue
            x[:, 5:] *= x[:, 4:5]
            box = xywh2xyxy(x[:, :4])
            conf, j = x[:, 5:].max(1, keepdim=True)
            output[xi] = torch.cat((box, conf, j.float()), 1)
        return output

    return candidates, [(torch.rand(2, 20, 8),)]


@case("https://github.com/pytorch/examples/blob/main/time_sequence_prediction/train.py (future=0 in training, future=10 to predict)")
def time_sequence_future():
    class Sequence(nn.Module):
        def __init__(self):
            super(Sequence, self).__init__()
            self.lstm1 = nn.LSTMCell(1, 8)
            self.lstm2 = nn.LSTMCell(8, 8)
            self.linear = nn.Linear(8, 1)

        def forward(self, input, future=0):
            outputs = []
            h_t = torch.zeros(input.size(0), 8, dtype=input.dtype)
            c_t = torch.zeros(input.size(0), 8, dtype=input.dtype)
            h_t2 = torch.zeros(input.size(0), 8, dtype=input.dtype)
            c_t2 = torch.zeros(input.size(0), 8, dtype=input.dtype)

            for input_t in input.split(1, dim=1):
                h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            for i in range(future):  # if we should predict the future
                h_t, c_t = self.lstm1(output, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            outputs = torch.cat(outputs, dim=1)
            return outputs

    seq = Sequence()
    data = torch.randn(3, 6)

    def predict(m):
        with torch.no_grad():
            return m(data, future=4)

    return seq, [(data,), predict]


@case(NANOGPT + " (GPT.forward with targets for training, without to sample)")
def nanogpt_targets_none():
    model = _nanogpt().eval()
    X = torch.randint(0, 64, (2, 8))
    Y = torch.randint(0, 64, (2, 8))

    def with_targets(m):
        with torch.no_grad():
            return m(X, Y)[1]

    def without(m):
        with torch.no_grad():
            return m(X)[0]

    return model, [with_targets, without]
