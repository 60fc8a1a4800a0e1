"""Real users' code the rest of the real-code part does not draw on: a stand-in for the held-out
set the doctor is judged on (issue 27). Written before any rule was changed for it, from sources
the other real modules use little or not at all: repros posted in issues of torchtune, PEFT,
DeepSpeed, prime-rl/torchtitan, fairseq-style and timm/diffusers library code written out inline
(those libraries are not installed here), and transformers model families no other case calls
(CLIP, Falcon, BLOOM, OPT, GPT-NeoX, RoBERTa, DeBERTa-v2, DINOv2, Longformer, BigBird,
Wav2Vec2, Mamba, Pegasus, GPT-BigCode, SegFormer), tiny configs, random weights, nothing
downloaded, called the way their documentation shows.

Each case names the issue or page its code comes from. CPU, ``backend="eager"``.

The suite runs the few of them its slice names (``SLICE`` in ``tests/test_doctor_corpus_real.py``). Tried and left out: a tiny Swin on images of two sizes (one recompile, but its compile takes minutes
on a CPU: too slow for the suite's slice).
"""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import case

PT = "https://github.com/pytorch/pytorch/issues/"
HF_DOCS = "https://huggingface.co/docs/transformers/model_doc/"

_SMALL = dict(vocab_size=96, max_position_embeddings=64)


def _ids(batch: int, length: int, vocab: int = 96) -> torch.Tensor:
    return torch.randint(3, vocab, (batch, length))


def _no_grad_call(*args, **kwargs):
    def run(m):
        with torch.no_grad():
            out = m(*args, **kwargs)
        if isinstance(out, torch.Tensor):
            return out
        return out.logits if hasattr(out, "logits") else out.last_hidden_state
    return run


def _generate(model, forward, *args, **kwargs):
    model.forward = forward
    try:
        return model.generate(*args, **kwargs)
    finally:
        del model.forward


# -- repros from issues ----------------------------------------------------------------------------
@case(PT + "141039 (torchtune LoRA: each block compiled, the first block's input does not require grad)")
def torchtune_lora_requires_grad():
    class SimpleLayer(nn.Module):
        def __init__(self, input_dim):
            super(SimpleLayer, self).__init__()
            # frozen
            self.linear_1 = nn.Linear(input_dim, input_dim)
            for param in self.linear_1.parameters():
                param.requires_grad = False

            # requires grad
            self.linear_2 = nn.Linear(input_dim, input_dim)

        def forward(self, x):
            x = self.linear_1(x)
            x = self.linear_2(x)
            return x

    class Model(nn.Module):
        def __init__(self, input_dim, num_layers):
            super().__init__()
            self.layers = nn.ModuleList([SimpleLayer(input_dim) for _ in range(num_layers)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    model = Model(8, 2)
    x = torch.randn(4, 8)

    def train_step(compiled_layer):
        out = x
        for layer in model.layers:
            out = compiled_layer(layer, out)
        out.sum().backward()
        return out.detach()

    def block(layer, h):  # training.compile_model compiles each block: one compiled code for every layer
        return layer(h)

    return block, [train_step, train_step]


@case(PT + "135410 (DeepSpeed ZeRO offload: a forward hook calls a torch._dynamo.disable'd function)")
def deepspeed_hook_disabled_fn():
    class MyModule(torch.nn.Module):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.fc0 = torch.nn.Linear(16, 16, bias=False)
            self.fc1 = torch.nn.Linear(16, 16, bias=False)
            self.dropout = torch.nn.Dropout(0.5)

        def forward(self, data, residual):
            output = residual + self.fc1(self.fc0(self.dropout(data))) * 0.5
            return output

    my_mod = MyModule().eval()

    @torch._dynamo.disable()
    def fn(t):
        return t.sin()

    def collect(m, i, o):
        tmp = fn(o)  # BREAK
        return tmp.add(1)

    my_mod.register_forward_hook(collect)
    for child in my_mod.children():
        child.register_forward_hook(collect)
    data, residual = torch.randn(4, 16), torch.randn(4, 16)
    return my_mod, [(data, residual)]


@case("https://github.com/PrimeIntellect-ai/prime-rl/issues/996 (torchtitan's MoE experts: a loop over tokens per expert)")
def moe_experts_for_loop_tolist():
    def _run_experts_for_loop(w1, w2, w3, x, num_tokens_per_expert):
        # NOTE: this would incur a synchronization between device and host
        num_tokens_per_expert = num_tokens_per_expert.tolist()  # BREAK

        # side-effect code due to the usage of generate_permute_indices
        num_padding = x.shape[0] - sum(num_tokens_per_expert)

        # a tuple of tensors indexed by experts
        # each with shape (tokens_per_expert(varying), dim)
        x = torch.split(
            x[: sum(num_tokens_per_expert)],
            split_size_or_sections=num_tokens_per_expert,
            dim=0,
        )
        out_experts_splits = []
        for expert_idx, x_expert in enumerate(x):
            h = F.silu(torch.matmul(x_expert, w1[expert_idx].transpose(-2, -1)))
            h = h * torch.matmul(x_expert, w3[expert_idx].transpose(-2, -1))
            h = torch.matmul(h, w2[expert_idx].transpose(-2, -1))
            # h shape (tokens_per_expert(varying), dim)
            out_experts_splits.append(h)
        out = torch.cat(out_experts_splits, dim=0)

        # side-effect code due to the usage of generate_permute_indices
        out = torch.vstack((out, out.new_zeros((num_padding, out.shape[-1]))))

        return out

    experts, dim, hidden = 4, 8, 16
    w1, w3 = torch.randn(experts, hidden, dim), torch.randn(experts, hidden, dim)
    w2 = torch.randn(experts, dim, hidden)
    x = torch.randn(12, dim)
    num_tokens_per_expert = torch.tensor([3, 4, 2, 1], dtype=torch.int32)
    return _run_experts_for_loop, [(w1, w2, w3, x, num_tokens_per_expert)]


@case("https://github.com/huggingface/peft/issues/1199 (PEFT's LoRA Linear.forward; set_adapter switches adapters between calls)")
def peft_lora_set_adapter():
    class Linear(nn.Module):
        """peft/tuners/lora/layer.py's Linear, its unmerged forward path."""

        def __init__(self, base_layer, adapter_names, r=4, lora_alpha=8):
            super().__init__()
            self.base_layer = base_layer
            self.lora_A = nn.ModuleDict({n: nn.Linear(base_layer.in_features, r, bias=False) for n in adapter_names})
            self.lora_B = nn.ModuleDict({n: nn.Linear(r, base_layer.out_features, bias=False) for n in adapter_names})
            self.lora_dropout = nn.ModuleDict({n: nn.Identity() for n in adapter_names})
            self.scaling = {n: lora_alpha / r for n in adapter_names}
            self.merged_adapters = []
            self.disable_adapters = False
            self._active_adapter = adapter_names[0]
            for n in adapter_names:
                nn.init.normal_(self.lora_B[n].weight)

        @property
        def merged(self):
            return bool(self.merged_adapters)

        @property
        def active_adapters(self):
            if isinstance(self._active_adapter, str):
                return [self._active_adapter]
            return self._active_adapter

        def set_adapter(self, adapter_names):
            if isinstance(adapter_names, str):
                adapter_names = [adapter_names]
            self._active_adapter = adapter_names

        def forward(self, x, *args, **kwargs):
            if self.disable_adapters:
                result = self.base_layer(x, *args, **kwargs)
            elif self.merged:
                result = self.base_layer(x, *args, **kwargs)
            else:
                result = self.base_layer(x, *args, **kwargs)
                torch_result_dtype = result.dtype
                for active_adapter in self.active_adapters:
                    if active_adapter not in self.lora_A.keys():
                        continue
                    lora_A = self.lora_A[active_adapter]
                    lora_B = self.lora_B[active_adapter]
                    dropout = self.lora_dropout[active_adapter]
                    scaling = self.scaling[active_adapter]
                    x = x.to(lora_A.weight.dtype)
                    result = result + lora_B(lora_A(dropout(x))) * scaling
                result = result.to(torch_result_dtype)
            return result

    model = nn.Sequential(Linear(nn.Linear(8, 8), ["default", "other"]), nn.ReLU(), nn.Linear(8, 2)).eval()
    x = torch.randn(3, 8)

    def with_adapter(name):
        def run(m):
            model[0].set_adapter(name)
            with torch.no_grad():
                return m(x)
        return run

    return model, [with_adapter("default"), with_adapter("other")]


@case("https://github.com/facebookresearch/fairseq/blob/main/fairseq/modules/sinusoidal_positional_embedding.py "
      "(SinusoidalPositionalEmbedding.forward, sentences of two lengths)")
def fairseq_sinusoidal_positions():
    def make_positions(tensor, padding_idx: int, onnx_trace: bool = False):
        # fairseq/utils.py
        mask = tensor.ne(padding_idx).int()
        return (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + padding_idx

    class SinusoidalPositionalEmbedding(nn.Module):
        def __init__(self, embedding_dim, padding_idx, init_size=1024):
            super().__init__()
            self.embedding_dim = embedding_dim
            self.padding_idx = padding_idx if padding_idx is not None else 0
            self.register_buffer("weights", SinusoidalPositionalEmbedding.get_embedding(
                init_size, embedding_dim, padding_idx), persistent=False)
            self.max_positions = int(1e5)
            self.onnx_trace = False

        @staticmethod
        def get_embedding(num_embeddings: int, embedding_dim: int, padding_idx=None):
            half_dim = embedding_dim // 2
            emb = math.log(10000) / (half_dim - 1)
            emb = torch.exp(torch.arange(half_dim, dtype=torch.float) * -emb)
            emb = torch.arange(num_embeddings, dtype=torch.float).unsqueeze(1) * emb.unsqueeze(0)
            emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1).view(num_embeddings, -1)
            if embedding_dim % 2 == 1:
                emb = torch.cat([emb, torch.zeros(num_embeddings, 1)], dim=1)
            if padding_idx is not None:
                emb[padding_idx, :] = 0
            return emb

        def forward(self, input, incremental_state=None, timestep=None, positions=None):
            bspair = torch.onnx.operators.shape_as_tensor(input)
            bsz, seq_len = bspair[0], bspair[1]
            max_pos = self.padding_idx + 1 + seq_len
            if max_pos > self.weights.size(0):
                # expand embeddings if needed
                self.weights = SinusoidalPositionalEmbedding.get_embedding(
                    max_pos, self.embedding_dim, self.padding_idx).to(self.weights)

            positions = make_positions(input, self.padding_idx, onnx_trace=self.onnx_trace)
            return (self.weights.index_select(0, positions.view(-1)).view(bsz, seq_len, -1).detach())

    embed = SinusoidalPositionalEmbedding(16, padding_idx=1, init_size=32)
    short = torch.randint(2, 50, (2, 7))
    longer = torch.randint(2, 50, (2, 11))
    return embed, [(short,), (longer,)]


@case("https://github.com/huggingface/pytorch-image-models/blob/main/timm/layers/pos_embed.py "
      "(resample_abs_pos_embed, a ViT with dynamic_img_size fed images of several sizes)")
def timm_resample_abs_pos_embed():
    def resample_abs_pos_embed(posemb, new_size, old_size=None, num_prefix_tokens=1,
                               interpolation="bicubic", antialias=True, verbose=False):
        # sort out sizes, assume square if old size not provided
        num_pos_tokens = posemb.shape[1]
        num_new_tokens = new_size[0] * new_size[1] + num_prefix_tokens
        if num_new_tokens == num_pos_tokens and new_size[0] == new_size[1]:
            return posemb

        if old_size is None:
            hw = int(math.sqrt(num_pos_tokens - num_prefix_tokens))
            old_size = hw, hw

        if num_prefix_tokens:
            posemb_prefix, posemb = posemb[:, :num_prefix_tokens], posemb[:, num_prefix_tokens:]
        else:
            posemb_prefix, posemb = None, posemb

        # do the interpolation
        embed_dim = posemb.shape[-1]
        orig_dtype = posemb.dtype
        posemb = posemb.float()  # interpolate needs float32
        posemb = posemb.reshape(1, old_size[0], old_size[1], -1).permute(0, 3, 1, 2)
        posemb = F.interpolate(posemb, size=new_size, mode=interpolation, antialias=antialias)
        posemb = posemb.permute(0, 2, 3, 1).reshape(1, -1, embed_dim)
        posemb = posemb.to(orig_dtype)

        # add back extra (class, etc) prefix tokens
        if posemb_prefix is not None:
            posemb = torch.cat([posemb_prefix, posemb], dim=1)
        return posemb

    class VisionTransformer(nn.Module):
        def __init__(self, img_size=32, patch_size=8, embed_dim=16):
            super().__init__()
            self.patch_size = patch_size
            self.patch_embed = nn.Conv2d(3, embed_dim, patch_size, patch_size)
            self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
            grid = img_size // patch_size
            self.pos_embed = nn.Parameter(torch.randn(1, grid * grid + 1, embed_dim) * .02)
            self.head = nn.Linear(embed_dim, 3)

        def _pos_embed(self, x):
            B, H, W, C = x.shape
            pos_embed = resample_abs_pos_embed(self.pos_embed, (H, W), num_prefix_tokens=1)
            x = x.view(B, -1, C)
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
            return x + pos_embed

        def forward(self, x):
            x = self.patch_embed(x).permute(0, 2, 3, 1)
            x = self._pos_embed(x)
            return self.head(x[:, 0])

    model = VisionTransformer().eval()
    images = [torch.randn(2, 3, s, s) for s in (32, 48, 64)]
    return model, [_no_grad_call(im) for im in images]


@case("https://github.com/huggingface/diffusers/blob/main/src/diffusers/schedulers/scheduling_ddim.py "
      "(DDIMScheduler.step compiled, called with each timestep of self.timesteps)")
def diffusers_ddim_step():
    class DDIMScheduler:
        def __init__(self, num_train_timesteps=1000, beta_start=0.0001, beta_end=0.02):
            self.num_train_timesteps = num_train_timesteps
            self.betas = torch.linspace(beta_start, beta_end, num_train_timesteps, dtype=torch.float32)
            self.alphas = 1.0 - self.betas
            self.alphas_cumprod = torch.cumprod(self.alphas, dim=0)
            self.final_alpha_cumprod = torch.tensor(1.0)
            self.num_inference_steps = None

        def set_timesteps(self, num_inference_steps):
            self.num_inference_steps = num_inference_steps
            step_ratio = self.num_train_timesteps // self.num_inference_steps
            timesteps = (np.arange(0, num_inference_steps) * step_ratio).round()[::-1].copy().astype(np.int64)
            self.timesteps = torch.from_numpy(timesteps)

        def step(self, model_output, timestep, sample, eta: float = 0.0):
            # 1. get previous step value (=t-1)
            prev_timestep = timestep - self.num_train_timesteps // self.num_inference_steps

            # 2. compute alphas, betas
            alpha_prod_t = self.alphas_cumprod[timestep]
            alpha_prod_t_prev = self.alphas_cumprod[prev_timestep] if prev_timestep >= 0 else self.final_alpha_cumprod  # BREAK

            beta_prod_t = 1 - alpha_prod_t

            # 3. compute predicted original sample from predicted noise also called "predicted x_0"
            pred_original_sample = (sample - beta_prod_t ** (0.5) * model_output) / alpha_prod_t ** (0.5)
            pred_epsilon = model_output

            # 6. compute "direction pointing to x_t" of formula (12) from https://arxiv.org/pdf/2010.02502.pdf
            pred_sample_direction = (1 - alpha_prod_t_prev) ** (0.5) * pred_epsilon

            # 7. compute x_t without "random noise" of formula (12) from https://arxiv.org/pdf/2010.02502.pdf
            prev_sample = alpha_prod_t_prev ** (0.5) * pred_original_sample + pred_sample_direction
            return prev_sample

    scheduler = DDIMScheduler()
    scheduler.set_timesteps(4)
    latents = torch.randn(1, 4, 8, 8)
    noise_pred = torch.randn(1, 4, 8, 8)

    def denoise(step):
        sample = latents
        for t in scheduler.timesteps[:2]:
            sample = step(noise_pred, t, sample)
        return sample

    return scheduler.step, [denoise]


@case(PT + "150403 (BertModel compiled, batch 1 and 2, sequence lengths from 1 up)")
def bert_model_lengths_from_one():
    from transformers import BertConfig, BertModel

    cfg = BertConfig(vocab_size=96, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                     max_position_embeddings=64)
    model = BertModel(cfg).eval()
    calls = []
    for b in range(1, 3):
        for s in range(1, 3):
            input_ids = torch.randint(0, 96, (b, s))
            attention_mask = torch.ones(b, s)
            calls.append(_no_grad_call(input_ids, attention_mask))
    return model, calls


# -- transformers families the other modules do not call ------------------------------------------
@case(HF_DOCS + "clip (torch.compile(model): captions of two lengths with one image batch)")
def clip_two_caption_lengths():
    from transformers import CLIPConfig, CLIPModel

    cfg = CLIPConfig(text_config=dict(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                      num_attention_heads=2, max_position_embeddings=32),
                     vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                        num_attention_heads=2, image_size=32, patch_size=8),
                     projection_dim=16)
    model = CLIPModel(cfg).eval()
    pixel_values = torch.randn(2, 3, 32, 32)

    def call(length):
        input_ids = _ids(3, length)

        def run(m):
            with torch.no_grad():
                return m(input_ids=input_ids, pixel_values=pixel_values).logits_per_image
        return run

    return model, [call(5), call(9)]


@case(HF_DOCS + "falcon (torch.compile(model) on a Falcon with alibi, prompts of two lengths)")
def falcon_alibi_lengths():
    from transformers import FalconConfig, FalconForCausalLM

    cfg = FalconConfig(vocab_size=96, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, alibi=True,
                       new_decoder_architecture=False, multi_query=True, parallel_attn=True, bias=False)
    model = FalconForCausalLM(cfg).eval()
    return model, [_no_grad_call(_ids(1, 6)), _no_grad_call(_ids(1, 10))]


@case(HF_DOCS + "bloom (generate with a compiled forward: ALiBi from the attention mask)")
def bloom_generate_compiled_forward():
    from transformers import BloomConfig, BloomForCausalLM

    cfg = BloomConfig(vocab_size=96, hidden_size=32, n_layer=1, n_head=4)
    model = BloomForCausalLM(cfg).eval()
    input_ids = _ids(1, 5)
    return model.forward, [lambda fwd: _generate(model, fwd, input_ids, max_new_tokens=3, do_sample=False)]


@case(HF_DOCS + "opt (generate with a compiled forward, a left-padded batch)")
def opt_generate_padded_batch():
    from transformers import OPTConfig, OPTForCausalLM

    cfg = OPTConfig(vocab_size=96, hidden_size=32, num_hidden_layers=1, ffn_dim=64, num_attention_heads=4,
                    max_position_embeddings=64, word_embed_proj_dim=32, pad_token_id=1)
    model = OPTForCausalLM(cfg).eval()
    input_ids = _ids(2, 6)
    attention_mask = torch.ones(2, 6, dtype=torch.long)
    attention_mask[1, :2] = 0
    return model.forward, [lambda fwd: _generate(model, fwd, input_ids=input_ids, attention_mask=attention_mask,
                                                 max_new_tokens=3, do_sample=False, pad_token_id=1)]


@case(HF_DOCS + "gpt_neox (torch.compile(model), prompts of several lengths)")
def gpt_neox_lengths():
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    cfg = GPTNeoXConfig(vocab_size=96, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64)
    model = GPTNeoXForCausalLM(cfg).eval()
    return model, [_no_grad_call(_ids(1, n)) for n in (4, 7, 12)]


@case(HF_DOCS + "roberta (torch.compile(model) for classification, batch 1 then 8)")
def roberta_batch_one_then_eight():
    from transformers import RobertaConfig, RobertaForSequenceClassification

    cfg = RobertaConfig(vocab_size=96, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=66, pad_token_id=1)
    model = RobertaForSequenceClassification(cfg).eval()
    return model, [_no_grad_call(_ids(1, 8)), _no_grad_call(_ids(8, 8))]


@case(HF_DOCS + "deberta-v2 (torch.compile(model), sentences of two lengths)")
def deberta_v2_lengths():
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    cfg = DebertaV2Config(vocab_size=96, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                          intermediate_size=64, max_position_embeddings=64, relative_attention=True,
                          position_buckets=16, pos_att_type=["p2c", "c2p"])
    model = DebertaV2ForSequenceClassification(cfg).eval()
    return model, [_no_grad_call(_ids(2, 6)), _no_grad_call(_ids(2, 11))]


@case(HF_DOCS + "dinov2 (torch.compile(model): features of images of two sizes)")
def dinov2_two_image_sizes():
    from transformers import Dinov2Config, Dinov2Model

    cfg = Dinov2Config(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                       image_size=32, patch_size=8)
    model = Dinov2Model(cfg).eval()
    return model, [_no_grad_call(torch.randn(1, 3, 32, 32)), _no_grad_call(torch.randn(1, 3, 48, 48))]


@case(HF_DOCS + "longformer (torch.compile(model) with a global attention mask on the first token)")
def longformer_global_attention():
    from transformers import LongformerConfig, LongformerModel

    cfg = LongformerConfig(vocab_size=96, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=80, attention_window=8, pad_token_id=1)
    model = LongformerModel(cfg).eval()
    input_ids = _ids(1, 16)
    global_attention_mask = torch.zeros(1, 16, dtype=torch.long)
    global_attention_mask[:, 0] = 1
    return model, [_no_grad_call(input_ids, global_attention_mask=global_attention_mask)]


@case(HF_DOCS + "big_bird (torch.compile(model), block-sparse attention on a long sequence)")
def bigbird_block_sparse():
    from transformers import BigBirdConfig, BigBirdModel

    cfg = BigBirdConfig(vocab_size=96, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, attention_type="block_sparse",
                        block_size=4, num_random_blocks=2)
    model = BigBirdModel(cfg).eval()
    return model, [_no_grad_call(_ids(1, 64))]


@case(HF_DOCS + "pegasus (generate with a compiled forward)")
def pegasus_generate_compiled_forward():
    from transformers import PegasusConfig, PegasusForConditionalGeneration

    cfg = PegasusConfig(vocab_size=96, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                        max_position_embeddings=64, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    model = PegasusForConditionalGeneration(cfg).eval()
    input_ids = _ids(1, 7)
    return model.forward, [lambda fwd: _generate(model, fwd, input_ids, max_new_tokens=3, do_sample=False)]


@case(HF_DOCS + "wav2vec2 (a compiled CTC training step: SpecAugment masks the features)")
def wav2vec2_ctc_train_step():
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC

    cfg = Wav2Vec2Config(vocab_size=12, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
                         num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, mask_time_prob=0.5,
                         mask_time_length=2, layerdrop=0.0, pad_token_id=0, ctc_loss_reduction="mean")
    model = Wav2Vec2ForCTC(cfg).train()
    input_values = torch.randn(2, 800)
    labels = torch.randint(1, 12, (2, 5))

    def step(m):
        out = m(input_values, labels=labels)
        return out.loss.shape

    return model, [step]


@case(HF_DOCS + "mamba (torch.compile(model), prompts of two lengths)")
def mamba_lengths():
    from transformers import MambaConfig, MambaForCausalLM

    cfg = MambaConfig(vocab_size=96, hidden_size=16, state_size=4, num_hidden_layers=1, expand=2, conv_kernel=4,
                      use_mambapy=False)
    model = MambaForCausalLM(cfg).eval()
    return model, [_no_grad_call(_ids(1, 5), use_cache=False), _no_grad_call(_ids(1, 9), use_cache=False)]


@case(HF_DOCS + "gpt_bigcode (torch.compile(model), batch 1 then 2)")
def gpt_bigcode_batch_one_then_two():
    from transformers import GPTBigCodeConfig, GPTBigCodeForCausalLM

    cfg = GPTBigCodeConfig(vocab_size=96, n_positions=64, n_embd=32, n_layer=1, n_head=4, multi_query=True)
    model = GPTBigCodeForCausalLM(cfg).eval()
    return model, [_no_grad_call(_ids(1, 8)), _no_grad_call(_ids(2, 8))]


@case(HF_DOCS + "segformer (torch.compile(model), images of two sizes)")
def segformer_two_image_sizes():
    from transformers import SegformerConfig, SegformerForSemanticSegmentation

    cfg = SegformerConfig(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[8, 16],
                          patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2],
                          decoder_hidden_size=16, num_labels=3)
    model = SegformerForSemanticSegmentation(cfg).eval()
    return model, [_no_grad_call(torch.randn(1, 3, 32, 32)), _no_grad_call(torch.randn(1, 3, 48, 48))]


@case(HF_DOCS + "marian (torch.compile(model) with labels: the loss, sentences of two lengths)")
def marian_labels_two_lengths():
    from transformers import MarianConfig, MarianMTModel

    cfg = MarianConfig(vocab_size=96, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                       decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                       max_position_embeddings=64, pad_token_id=95, decoder_start_token_id=95, eos_token_id=0)
    model = MarianMTModel(cfg).eval()

    def call(n):
        input_ids, labels = _ids(2, n), _ids(2, n + 1)

        def run(m):
            with torch.no_grad():
                return m(input_ids=input_ids, labels=labels).loss
        return run

    return model, [call(5), call(8)]
