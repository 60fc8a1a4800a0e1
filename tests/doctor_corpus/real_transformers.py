"""Real users' code: transformers models (5.x, tiny configs, random weights, nothing
downloaded) called the way people call them: ``torch.compile(model)``,
``model.forward = torch.compile(model.forward)`` with ``generate()``, a decode loop over
``past_key_values``, variable batch and sequence lengths, masks, flags, MoE routing.

The model code is transformers' own (imported, not copied); the user code is the few
lines of each case, written as the issue or the documentation named in ``@case`` shows
it. Breaks and recompiles here happen inside the library: the user's own lines are the
call and the inputs.

Tried and left out: ``torch.compile(model).generate(...)`` (generate calls the original
module, nothing is compiled: no break or recompile to explain); ``torch.compile(model)`` on a
tiny Mixtral, one call (its sparse MoE block traces without a break on torch 2.13); generate on a
tiny BART with a compiled forward (no recompile on torch 2.13).
"""

import torch

from . import _tiny, case

HF = "https://github.com/huggingface/transformers/issues/"
PT = "https://github.com/pytorch/pytorch/issues/"
DOCS = "https://huggingface.co/docs/transformers/llm_optims"


@case(PT + "141589 (seq len 64, then 1; transformers Llama for torchtune's)")
def llama_seq_len_then_one():
    model = _tiny.llama()
    inps_full_seq = torch.ones(1, 16, dtype=torch.long)
    inps_single_token = torch.ones(1, 1, dtype=torch.long)
    inps_longer_seq_len = torch.ones(1, 20, dtype=torch.long)
    inps_medium_seq_len = torch.ones(1, 18, dtype=torch.long)

    def call(inp):
        def run(policy_model):
            with torch.no_grad():
                return policy_model(inp).logits
        return run

    return model, [call(inps_full_seq), call(inps_single_token), call(inps_single_token),
                   call(inps_longer_seq_len), call(inps_medium_seq_len)]


@case(DOCS + " (model.forward = torch.compile(model.forward), then generate)")
def llama_generate_compiled_forward():
    model = _tiny.llama()
    input_ids = _tiny.ids(1, 5)
    return model.forward, [lambda fwd: _tiny.generate_with(model, fwd, input_ids, max_new_tokens=4, do_sample=False)]


@case(HF + "34906 (generate with a compiled forward, two prompts of different lengths)")
def gpt2_generate_two_prompts():
    model = _tiny.gpt2()
    short = _tiny.ids(1, 4)
    longer = _tiny.ids(1, 9)
    return model.forward, [lambda fwd: _tiny.generate_with(model, fwd, short, max_new_tokens=3, do_sample=False),
                           lambda fwd: _tiny.generate_with(model, fwd, longer, max_new_tokens=3, do_sample=False)]


@case(DOCS + " (a batch of prompts with an attention mask, left padding)")
def llama_generate_batch_with_mask():
    model = _tiny.llama()
    input_ids = _tiny.ids(2, 6)
    attention_mask = torch.ones(2, 6, dtype=torch.long)
    attention_mask[1, :2] = 0
    return model.forward, [lambda fwd: _tiny.generate_with(model, fwd, input_ids=input_ids, attention_mask=attention_mask,
                                                          max_new_tokens=3, do_sample=False, pad_token_id=0)]


@case(DOCS + " (static cache: generate(cache_implementation='static'))")
def llama_generate_static_cache():
    model = _tiny.llama()
    input_ids = _tiny.ids(1, 5)
    return model.forward, [lambda fwd: _tiny.generate_with(model, fwd, input_ids, max_new_tokens=4, do_sample=False,
                                                          cache_implementation="static")]


@case("https://huggingface.co/docs/transformers/perf_torch_compile (torch.compile(model), batches of different lengths)")
def gpt2_compiled_sequence_lengths():
    model = _tiny.gpt2()
    batches = [_tiny.ids(2, n) for n in (8, 12, 16)]

    def call(batch):
        def run(compiled_model):
            with torch.no_grad():
                return compiled_model(batch).logits
        return run

    return model, [call(b) for b in batches]


@case("https://huggingface.co/docs/transformers/perf_torch_compile (batch size 1, then a full batch)")
def gpt2_compiled_batch_one_then_four():
    model = _tiny.gpt2()
    batches = [_tiny.ids(n, 8) for n in (1, 4, 3)]

    def call(batch):
        def run(compiled_model):
            with torch.no_grad():
                return compiled_model(batch).logits
        return run

    return model, [call(b) for b in batches]


@case("https://huggingface.co/docs/transformers/perf_torch_compile (calls with and without attention_mask)")
def bert_mask_none_then_tensor():
    model = _tiny.bert()
    input_ids = _tiny.ids(2, 10)
    attention_mask = torch.ones(2, 10, dtype=torch.long)
    attention_mask[0, 7:] = 0

    def without(m):
        with torch.no_grad():
            return m(input_ids).logits

    def with_mask(m):
        with torch.no_grad():
            return m(input_ids, attention_mask=attention_mask).logits

    return model, [without, with_mask]


@case("https://huggingface.co/docs/transformers/tasks/sequence_classification (padded batches of varying length)")
def bert_padded_batches():
    model = _tiny.bert()
    calls = []
    for length in (6, 9, 13):
        input_ids = _tiny.ids(4, length)
        attention_mask = torch.ones(4, length, dtype=torch.long)
        attention_mask[1:, length - 2:] = 0

        def run(m, input_ids=input_ids, attention_mask=attention_mask):
            with torch.no_grad():
                return m(input_ids=input_ids, attention_mask=attention_mask).logits
        calls.append(run)
    return model, calls


@case("https://huggingface.co/docs/transformers/main_classes/output (output_attentions on one call)")
def gpt2_output_attentions_flag():
    model = _tiny.gpt2()
    input_ids = _tiny.ids(1, 8)

    def plain(m):
        with torch.no_grad():
            return m(input_ids).logits

    def attentions(m):
        with torch.no_grad():
            out = m(input_ids, output_attentions=True)
            return out.logits, out.attentions

    return model, [plain, attentions]


@case("https://huggingface.co/docs/transformers/model_doc/gpt2 (use_cache=False for scoring, then the default)")
def gpt2_use_cache_flag():
    model = _tiny.gpt2()
    input_ids = _tiny.ids(2, 8)

    def scoring(m):
        with torch.no_grad():
            return m(input_ids, use_cache=False).logits

    def default(m):
        with torch.no_grad():
            return m(input_ids).logits

    return model, [scoring, default]


@case("https://huggingface.co/docs/transformers/model_doc/gpt2 (a manual decode loop over past_key_values)")
def gpt2_manual_decode_loop():
    model = _tiny.gpt2()
    input_ids = _tiny.ids(1, 6)

    def decode(m):
        out = []
        with torch.no_grad():
            o = m(input_ids, use_cache=True)
            past = o.past_key_values
            next_token = o.logits[:, -1:].argmax(-1)
            for _ in range(3):
                out.append(next_token)
                o = m(next_token, past_key_values=past, use_cache=True)
                past = o.past_key_values
                next_token = o.logits[:, -1:].argmax(-1)
        return torch.cat(out, 1)

    return model, [decode]


@case("https://huggingface.co/docs/transformers/model_doc/qwen2_moe (MoE routing, two sequence lengths)")
def qwen2_moe_two_lengths():
    model = _tiny.qwen2_moe()

    def call(n):
        x = _tiny.ids(1, n)

        def run(m):
            with torch.no_grad():
                return m(x).logits
        return run

    return model, [call(6), call(10)]


@case("https://huggingface.co/docs/transformers/model_doc/mistral (sliding window, prompts longer than the window)")
def mistral_lengths_across_window():
    model = _tiny.mistral()

    def call(n):
        x = _tiny.ids(1, n)

        def run(m):
            with torch.no_grad():
                return m(x).logits
        return run

    return model, [call(6), call(12), call(20)]


@case("https://huggingface.co/docs/transformers/model_doc/t5 (compiled forward with decoder_input_ids)")
def t5_encoder_decoder_lengths():
    model = _tiny.t5()

    def call(src, tgt):
        input_ids = _tiny.ids(2, src)
        decoder_input_ids = _tiny.ids(2, tgt)

        def run(m):
            with torch.no_grad():
                return m(input_ids=input_ids, decoder_input_ids=decoder_input_ids).logits
        return run

    return model, [call(8, 4), call(11, 4), call(11, 1)]


@case("https://huggingface.co/docs/transformers/model_doc/vit (one image, then a batch)")
def vit_one_image_then_batch():
    model = _tiny.vit()

    def call(n):
        pixel_values = torch.randn(n, 3, 32, 32)

        def run(m):
            with torch.no_grad():
                return m(pixel_values).logits
        return run

    return model, [call(1), call(2), call(5)]


@case("https://huggingface.co/docs/transformers/model_doc/whisper (generate with a compiled forward)")
def whisper_generate_compiled_forward():
    model = _tiny.whisper()
    input_features = torch.randn(1, 8, 32)
    return model.forward, [lambda fwd: _tiny.generate_with(model, fwd, input_features, max_new_tokens=3, do_sample=False)]


@case(HF + "34615 (labels passed: the model computes its loss)")
def llama_labels_loss():
    model = _tiny.llama()
    input_ids = _tiny.ids(2, 8)

    def no_labels(m):
        with torch.no_grad():
            return m(input_ids).logits

    def labels(m):
        with torch.no_grad():
            return m(input_ids, labels=input_ids).loss

    return model, [no_labels, labels]


@case("https://huggingface.co/docs/transformers/llm_tutorial (dtype: the model in bfloat16 for inference)")
def llama_dtype_switch():
    model = _tiny.llama()
    input_ids = _tiny.ids(1, 8)

    def fp32(m):
        with torch.no_grad():
            return m(input_ids).logits

    def bf16(m):
        model.to(torch.bfloat16)
        try:
            with torch.no_grad():
                return m(input_ids).logits.float()
        finally:
            model.to(torch.float32)

    return model, [fp32, bf16]


@case(PT + "128071 (a compiled decoder layer shared by every layer: recompiles per layer; 10 layers, limit 8)")
def llama_per_layer_compile():
    import types

    model = _tiny.llama(layers=10)
    layer_forward = type(model.model.layers[0]).forward
    input_ids = _tiny.ids(1, 6)

    def run(compiled_forward):
        for layer in model.model.layers:
            layer.forward = types.MethodType(compiled_forward, layer)
        try:
            with torch.no_grad():
                return model(input_ids).logits
        finally:
            for layer in model.model.layers:
                del layer.forward

    return layer_forward, [run]


@case(PT + "128071 (fn = torch.compile(model.generate))")
def gpt2_compiled_generate():
    model = _tiny.gpt2()
    input_ids = _tiny.ids(1, 5)
    return model.generate, [lambda fn: fn(input_ids=input_ids, max_new_tokens=2, do_sample=False, pad_token_id=0)]


@case("https://huggingface.co/docs/transformers/generation_strategies (beam search with a compiled forward)")
def gpt2_beam_search_compiled_forward():
    model = _tiny.gpt2()
    input_ids = _tiny.ids(1, 5)
    return model.forward, [lambda fwd: _tiny.generate_with(model, fwd, input_ids, max_new_tokens=3, num_beams=2,
                                                          do_sample=False, pad_token_id=0)]


@case("https://huggingface.co/docs/transformers/generation_strategies (sampling with a compiled forward)")
def llama_sampling_compiled_forward():
    model = _tiny.llama()
    input_ids = _tiny.ids(1, 4)

    def run(fwd):
        torch.manual_seed(0)
        return _tiny.generate_with(model, fwd, input_ids, max_new_tokens=3, do_sample=True, temperature=0.7, top_k=10)

    return model.forward, [run]


@case("https://huggingface.co/docs/transformers/llm_tutorial (one prompt, then a batch of two)")
def llama_generate_one_then_two_prompts():
    model = _tiny.llama()
    one = _tiny.ids(1, 5)
    two = _tiny.ids(2, 5)
    return model.forward, [lambda fwd: _tiny.generate_with(model, fwd, one, max_new_tokens=2, do_sample=False),
                           lambda fwd: _tiny.generate_with(model, fwd, two, max_new_tokens=2, do_sample=False)]


@case("https://huggingface.co/docs/transformers/model_doc/t5 (generate with a compiled forward)")
def t5_generate_compiled_forward():
    model = _tiny.t5()
    input_ids = _tiny.ids(1, 7)
    return model.forward, [lambda fwd: _tiny.generate_with(model, fwd, input_ids, max_new_tokens=3, do_sample=False)]


@case("https://huggingface.co/docs/transformers/model_doc/bert (token_type_ids for sentence pairs on one call)")
def bert_token_type_ids():
    model = _tiny.bert()
    input_ids = _tiny.ids(2, 10)
    token_type_ids = torch.zeros(2, 10, dtype=torch.long)
    token_type_ids[:, 5:] = 1

    def single(m):
        with torch.no_grad():
            return m(input_ids).logits

    def pair(m):
        with torch.no_grad():
            return m(input_ids, token_type_ids=token_type_ids).logits

    return model, [single, pair]


@case("https://huggingface.co/docs/transformers/main_classes/output (output_hidden_states for features)")
def llama_output_hidden_states():
    model = _tiny.llama()
    input_ids = _tiny.ids(1, 8)

    def plain(m):
        with torch.no_grad():
            return m(input_ids).logits

    def hidden(m):
        with torch.no_grad():
            return m(input_ids, output_hidden_states=True).hidden_states[-1]

    return model, [plain, hidden]


@case("https://huggingface.co/docs/transformers/model_doc/llama (inputs_embeds instead of input_ids)")
def llama_inputs_embeds():
    model = _tiny.llama()
    input_ids = _tiny.ids(1, 8)

    def ids_call(m):
        with torch.no_grad():
            return m(input_ids=input_ids).logits

    def embeds_call(m):
        with torch.no_grad():
            return m(inputs_embeds=model.get_input_embeddings()(input_ids)).logits

    return model, [ids_call, embeds_call]


@case("https://huggingface.co/docs/transformers/model_doc/vit (interpolate_pos_encoding for larger images)")
def vit_interpolate_pos_encoding():
    model = _tiny.vit()

    def call(size):
        pixel_values = torch.randn(1, 3, size, size)

        def run(m):
            with torch.no_grad():
                return m(pixel_values, interpolate_pos_encoding=True).logits
        return run

    return model, [call(32), call(48)]


@case("https://huggingface.co/docs/transformers/model_doc/gpt2 (return_dict=False: the tuple output)")
def gpt2_return_dict_false():
    model = _tiny.gpt2()
    input_ids = _tiny.ids(1, 8)

    def tuple_out(m):
        with torch.no_grad():
            return m(input_ids, return_dict=False)[0]

    def dict_out(m):
        with torch.no_grad():
            return m(input_ids).logits

    return model, [tuple_out, dict_out]


@case("https://huggingface.co/docs/transformers/model_doc/whisper (the encoder on a batch of one, then four)")
def whisper_encoder_batches():
    model = _tiny.whisper()
    encoder = model.get_encoder()

    def call(n):
        feats = torch.randn(n, 8, 32)

        def run(m):
            with torch.no_grad():
                return m(feats).last_hidden_state
        return run

    return encoder, [call(1), call(4)]


@case("https://huggingface.co/docs/transformers/model_doc/mistral (generate past the sliding window with a compiled forward)")
def mistral_generate_past_window():
    model = _tiny.mistral()
    input_ids = _tiny.ids(1, 6)
    return model.forward, [lambda fwd: _tiny.generate_with(model, fwd, input_ids, max_new_tokens=5, do_sample=False)]


@case("https://huggingface.co/docs/transformers/model_doc/qwen2_moe (generate with a compiled forward: MoE routing per token)")
def qwen2_moe_generate():
    model = _tiny.qwen2_moe()
    input_ids = _tiny.ids(1, 5)
    return model.forward, [lambda fwd: _tiny.generate_with(model, fwd, input_ids, max_new_tokens=3, do_sample=False)]


@case("https://github.com/huggingface/transformers/issues/36484 (FSDP2: fully_shard per decoder layer of a Qwen2 model, "
      "then each layer compiled as torchtune's per-layer compile does, "
      "https://github.com/meta-pytorch/torchtune/pull/1419; 10 layers, limit 8)")
def qwen2_fsdp2_per_layer_compile():
    import copy
    import types

    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(hidden_size=32, intermediate_size=64, num_hidden_layers=10, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=96, max_position_embeddings=64)
    model = Qwen2ForCausalLM(cfg).eval()
    layer_forward = type(model.model.layers[0]).forward
    input_ids = _tiny.ids(1, 6)

    def run(compiled_forward):
        # a gloo process group of one rank in this process (world size 1 runs on a CPU), for this call only:
        # the test process is left without one, as it was
        mine = not dist.is_initialized()
        if mine:
            dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
        try:
            sharded = copy.deepcopy(model)
            for layer in sharded.model.layers:
                fully_shard(layer)
            fully_shard(sharded)
            for layer in sharded.model.layers:  # each layer's forward compiled on its own, inside FSDP2's hooks
                layer.forward = types.MethodType(compiled_forward, layer)
            with torch.no_grad():
                return sharded(input_ids).logits
        finally:
            if mine:
                dist.destroy_process_group()

    return layer_forward, [run]


@case("https://huggingface.co/docs/transformers/tasks/token_classification (labels with -100 padding, two lengths)")
def bert_token_classification_lengths():
    from transformers import BertConfig, BertForTokenClassification

    cfg = BertConfig(vocab_size=96, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                     max_position_embeddings=64, num_labels=3)
    model = BertForTokenClassification(cfg).eval()

    def call(n):
        input_ids = _tiny.ids(2, n)
        labels = torch.randint(0, 3, (2, n))
        labels[:, -2:] = -100

        def run(m):
            with torch.no_grad():
                return m(input_ids=input_ids, labels=labels).loss
        return run

    return model, [call(7), call(11)]


# -- other families, called the same ways --------------------------------------------------------
def _lengths(model, lengths, batch=1):
    def call(n):
        x = _tiny.ids(batch, n)

        def run(m):
            with torch.no_grad():
                return m(x).logits
        return run

    return model, [call(n) for n in lengths]


def _generate(model, prompt_len=5, new=3, batch=1):
    input_ids = _tiny.ids(batch, prompt_len)
    return model.forward, [lambda fwd: _tiny.generate_with(model, fwd, input_ids, max_new_tokens=new, do_sample=False,
                                                          pad_token_id=0)]


@case("https://huggingface.co/docs/transformers/model_doc/gemma (torch.compile(model), prompts of several lengths)")
def gemma_compiled_lengths():
    return _lengths(_tiny.causal_lm("gemma"), (6, 9, 12))


@case("https://huggingface.co/docs/transformers/model_doc/gemma (generate with a compiled forward)")
def gemma_generate_compiled_forward():
    return _generate(_tiny.causal_lm("gemma"))


@case("https://huggingface.co/docs/transformers/model_doc/phi3 (torch.compile(model), batch 1 then 2)")
def phi3_batch_one_then_two():
    model = _tiny.causal_lm("phi3")

    def call(b):
        x = _tiny.ids(b, 8)

        def run(m):
            with torch.no_grad():
                return m(x).logits
        return run

    return model, [call(1), call(2)]


@case("https://huggingface.co/docs/transformers/model_doc/phi3 (generate with a compiled forward)")
def phi3_generate_compiled_forward():
    return _generate(_tiny.causal_lm("phi3"))


@case("https://huggingface.co/docs/transformers/model_doc/qwen2 (torch.compile(model), prompts of several lengths)")
def qwen2_compiled_lengths():
    return _lengths(_tiny.causal_lm("qwen2"), (5, 7, 11))


@case("https://huggingface.co/docs/transformers/model_doc/qwen2 (generate with a compiled forward, a batch of two)")
def qwen2_generate_batch_two():
    return _generate(_tiny.causal_lm("qwen2"), batch=2)


@case("https://huggingface.co/docs/transformers/model_doc/olmoe (torch.compile(model) on a MoE, two lengths)")
def olmoe_compiled_lengths():
    return _lengths(_tiny.causal_lm("olmoe"), (6, 10))


@case("https://huggingface.co/docs/transformers/model_doc/qwen3_moe (generate with a compiled forward)")
def qwen3_moe_generate_compiled_forward():
    return _generate(_tiny.causal_lm("qwen3_moe"))


@case("https://huggingface.co/docs/transformers/model_doc/distilbert (torch.compile(model), padded batches of two lengths)")
def distilbert_padded_lengths():
    model = _tiny.encoder("distilbert")

    def call(n):
        input_ids = _tiny.ids(2, n)
        attention_mask = torch.ones(2, n, dtype=torch.long)
        attention_mask[1, -2:] = 0

        def run(m):
            with torch.no_grad():
                return m(input_ids=input_ids, attention_mask=attention_mask).logits
        return run

    return model, [call(8), call(13)]


@case("https://huggingface.co/docs/transformers/model_doc/bart (torch.compile(model) with labels: the loss)")
def bart_labels_loss():
    model = _tiny.encoder("bart")
    input_ids = _tiny.ids(2, 9)
    labels = _tiny.ids(2, 5)

    def plain(m):
        with torch.no_grad():
            return m(input_ids=input_ids, decoder_input_ids=labels).logits

    def with_labels(m):
        with torch.no_grad():
            return m(input_ids=input_ids, labels=labels).loss

    return model, [plain, with_labels]


@case("https://huggingface.co/docs/transformers/model_doc/gemma (inference under no_grad, then a training forward)")
def gemma_no_grad_then_train():
    model = _tiny.causal_lm("gemma")
    input_ids = _tiny.ids(1, 8)

    def infer(m):
        with torch.no_grad():
            return m(input_ids).logits

    def train(m):
        out = m(input_ids, labels=input_ids)
        out.loss.backward()
        return out.loss.detach()

    return model, [infer, train]
