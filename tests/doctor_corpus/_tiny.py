"""Tiny transformers models for the real-code part (random weights, nothing downloaded).

Every builder makes a fresh model from a small config of the model's own class, as a
user's test or notebook would (``AutoConfig`` values shrunk so a compile takes a second
or two on a CPU). The harness seeds torch before each case builds, so the eager and the
compiled run see the same weights.
"""

from __future__ import annotations

import torch

_SMALL = dict(vocab_size=96, max_position_embeddings=64)


def gpt2(**kw):
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(vocab_size=96, n_positions=64, n_embd=32, n_layer=1, n_head=2, **kw)
    return GPT2LMHeadModel(cfg).eval()


def llama(layers: int = 1, **kw):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=layers, num_attention_heads=4,
                      num_key_value_heads=2, **_SMALL, **kw)
    return LlamaForCausalLM(cfg).eval()


def mistral(**kw):
    from transformers import MistralConfig, MistralForCausalLM

    cfg = MistralConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                        num_key_value_heads=2, sliding_window=8, **_SMALL, **kw)
    return MistralForCausalLM(cfg).eval()


def mixtral(**kw):
    from transformers import MixtralConfig, MixtralForCausalLM

    cfg = MixtralConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                        num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, **_SMALL, **kw)
    return MixtralForCausalLM(cfg).eval()


def qwen2_moe(**kw):
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM

    cfg = Qwen2MoeConfig(hidden_size=32, intermediate_size=64, moe_intermediate_size=32,
                         shared_expert_intermediate_size=32, num_hidden_layers=1, num_attention_heads=4,
                         num_key_value_heads=2, num_experts=4, num_experts_per_tok=2, **_SMALL, **kw)
    return Qwen2MoeForCausalLM(cfg).eval()


def bert(num_labels: int = 2, **kw):
    from transformers import BertConfig, BertForSequenceClassification

    cfg = BertConfig(vocab_size=96, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                     max_position_embeddings=64, num_labels=num_labels, **kw)
    return BertForSequenceClassification(cfg).eval()


def t5(**kw):
    from transformers import T5Config, T5ForConditionalGeneration

    cfg = T5Config(vocab_size=96, d_model=32, d_kv=8, d_ff=64, num_layers=1, num_heads=4,
                   decoder_start_token_id=0, **kw)
    return T5ForConditionalGeneration(cfg).eval()


def vit(**kw):
    from transformers import ViTConfig, ViTForImageClassification

    cfg = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=1,
                    num_attention_heads=2, intermediate_size=64, num_labels=3, **kw)
    return ViTForImageClassification(cfg).eval()


def whisper(**kw):
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    cfg = WhisperConfig(vocab_size=96, num_mel_bins=8, d_model=32, encoder_layers=1, decoder_layers=1,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                        decoder_ffn_dim=64, max_source_positions=16, max_target_positions=32,
                        decoder_start_token_id=1, pad_token_id=0, eos_token_id=2, bos_token_id=1, **kw)
    return WhisperForConditionalGeneration(cfg).eval()


def ids(batch: int, length: int, vocab: int = 96) -> torch.Tensor:
    return torch.randint(3, vocab, (batch, length))


def generate_with(model, forward, *args, **kwargs):
    """``model.forward = torch.compile(model.forward)`` then ``model.generate(...)``, as users do it;
    the model's own forward is put back afterwards."""
    model.forward = forward
    try:
        return model.generate(*args, **kwargs)
    finally:
        del model.forward


def causal_lm(family: str, **kw):
    """A tiny causal LM of another family (Gemma, Phi-3, Qwen2, OLMoE, Qwen3-MoE), one layer."""
    import transformers

    common = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                  num_key_value_heads=2, **_SMALL)
    configs = {
        "gemma": ("GemmaConfig", "GemmaForCausalLM", dict(head_dim=8)),
        "phi3": ("Phi3Config", "Phi3ForCausalLM", dict(pad_token_id=0)),
        "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
        "olmoe": ("OlmoeConfig", "OlmoeForCausalLM", dict(num_experts=4, num_experts_per_tok=2)),
        "qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM", dict(num_experts=4, num_experts_per_tok=2,
                                                                    moe_intermediate_size=32, head_dim=8)),
    }
    cfg_name, model_name, extra = configs[family]
    cfg = getattr(transformers, cfg_name)(**common, **extra, **kw)
    return getattr(transformers, model_name)(cfg).eval()


def encoder(family: str, **kw):
    """A tiny DistilBERT or BART (sequence classification / conditional generation)."""
    import transformers

    if family == "distilbert":
        cfg = transformers.DistilBertConfig(vocab_size=96, dim=32, n_layers=1, n_heads=2, hidden_dim=64,
                                            max_position_embeddings=64, **kw)
        return transformers.DistilBertForSequenceClassification(cfg).eval()
    cfg = transformers.BartConfig(vocab_size=96, d_model=32, encoder_layers=1, decoder_layers=1,
                                  encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                                  decoder_ffn_dim=64, max_position_embeddings=64, **kw)
    return transformers.BartForConditionalGeneration(cfg).eval()
