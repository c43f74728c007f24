#!/usr/bin/env python3
"""Write a tiny random-weight Llama-architecture GGUF model and the
tokenizer.json of its vocabulary, for goodput's tests against llama.cpp's
llama-server. Only registry packages: gguf, numpy, tokenizers.

    make_model.py OUT_DIR [--words FILE] [--embd 256] [--layers 4] [--vocab 1024] [--varied]

writes OUT_DIR/tiny.gguf and OUT_DIR/tokenizer.json.

The vocabulary is a byte-level BPE trained on goodput's own word list
(ASCII only), so every token decodes to whole UTF-8 text: llama-server then
streams exactly one token per event, and a count of events is a count of
tokens. Two special tokens (BOS, EOS) sit at the end of the vocabulary; the
weights are seeded, so the model is the same on every machine.

With --varied the vocabulary is what real ones are (Llama 3's, Qwen's): a
byte-level BPE over all 256 bytes, trained on the word list and on text in
other scripts (accented Latin, Greek, Cyrillic, CJK, emoji), so that some
tokens are pieces of a character's UTF-8 bytes. llama-server holds such a
token back until its character is whole: it streams no text of its own, and
a count of events falls short of the tokens generated.
"""

import argparse
import json
import os
import sys

import numpy as np


def varied_lines(words, seed=20261128):
    """Seeded text in several scripts: each line some of goodput's words and
    words spelled in other scripts' letters (whose UTF-8 is 2 to 4 bytes)."""
    rng = np.random.default_rng(seed)
    scripts = [
        [chr(c) for c in range(0x00E0, 0x0100)],  # accented Latin, 2 bytes
        [chr(c) for c in range(0x03B1, 0x03CA)],  # Greek, 2 bytes
        [chr(c) for c in range(0x0430, 0x0450)],  # Cyrillic, 2 bytes
        [chr(c) for c in range(0x4E00, 0x4E00 + 400)],  # CJK, 3 bytes
        [chr(c) for c in range(0x1F600, 0x1F640)],  # emoji, 4 bytes
    ]
    lines = []
    for i in range(0, len(words), 8):
        parts = list(words[i : i + 8])
        for _ in range(6):
            letters = scripts[rng.integers(len(scripts))]
            n = int(rng.integers(1, 7))
            parts.insert(int(rng.integers(len(parts) + 1)), "".join(rng.choice(letters, n)))
        lines.append(" ".join(parts))
    return lines


def train_tokenizer(words, vocab_size, varied=False):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    # Printable ASCII, space, newline and tab as byte-level symbols: any
    # prompt of goodput's (and the chat template's text) tokenizes; nothing
    # decodes to a partial UTF-8 sequence.
    alphabet = [c for c in pre_tokenizers.ByteLevel.alphabet()]
    ascii_syms = set(
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        .pre_tokenize_str("".join(chr(b) for b in range(0x20, 0x7F)) + "\n\t")[0][0]
    )
    if not varied:
        alphabet = [c for c in alphabet if c in ascii_syms]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - 2,
        initial_alphabet=alphabet,
        show_progress=False,
        special_tokens=[],
        limit_alphabet=len(alphabet),
    )
    lines = [" ".join(words[i : i + 12]) for i in range(0, len(words), 12)]
    # Weight frequent words the way prompts use them.
    lines = lines * 4
    if varied:
        lines += varied_lines(words)
    tok.train_from_iterator(lines, trainer=trainer)
    n = tok.get_vocab_size()
    tok.add_special_tokens(["<s>", "</s>"])
    return tok, n


def write_gguf(path, tok, n_plain, embd, layers, ctx):
    import gguf

    vocab = tok.get_vocab()
    size = len(vocab)
    tokens = [None] * size
    for t, i in vocab.items():
        tokens[i] = t
    bos, eos = vocab["<s>"], vocab["</s>"]
    spec = json.loads(tok.to_str())
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    types = [gguf.TokenType.NORMAL] * size
    types[bos] = gguf.TokenType.CONTROL
    types[eos] = gguf.TokenType.CONTROL

    heads = max(1, embd // 64)
    ff = embd * 4
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("goodput-tiny-random")
    w.add_context_length(ctx)
    w.add_embedding_length(embd)
    w.add_block_count(layers)
    w.add_feed_forward_length(ff)
    w.add_head_count(heads)
    w.add_head_count_kv(heads)
    w.add_rope_dimension_count(embd // heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(bos)
    w.add_eos_token_id(eos)
    w.add_add_bos_token(False)
    w.add_chat_template(
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant:{% endif %}"
    )

    rng = np.random.default_rng(20261125)

    def rand(*shape, scale=None):
        s = scale if scale is not None else 1.0 / np.sqrt(shape[-1])
        return (rng.standard_normal(shape) * s).astype(np.float32)

    w.add_tensor("token_embd.weight", rand(size, embd, scale=1.0))
    w.add_tensor("output_norm.weight", np.ones(embd, dtype=np.float32))
    w.add_tensor("output.weight", rand(size, embd))
    for i in range(layers):
        b = f"blk.{i}."
        w.add_tensor(b + "attn_norm.weight", np.ones(embd, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            w.add_tensor(b + name + ".weight", rand(embd, embd))
        w.add_tensor(b + "ffn_norm.weight", np.ones(embd, dtype=np.float32))
        w.add_tensor(b + "ffn_gate.weight", rand(ff, embd))
        w.add_tensor(b + "ffn_up.weight", rand(ff, embd))
        w.add_tensor(b + "ffn_down.weight", rand(embd, ff))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_words = os.path.join(here, "..", "..", "..", "goodput-common", "src", "words.txt")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--words", default=default_words)
    p.add_argument("--embd", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--ctx", type=int, default=4096)
    p.add_argument("--varied", action="store_true", help="all 256 bytes, text in other scripts")
    a = p.parse_args()
    with open(a.words) as f:
        words = f.read().split()
    os.makedirs(a.out, exist_ok=True)
    tok, n_plain = train_tokenizer(words, a.vocab, a.varied)
    tok.save(os.path.join(a.out, "tokenizer.json"))
    write_gguf(os.path.join(a.out, "tiny.gguf"), tok, n_plain, a.embd, a.layers, a.ctx)
    print(os.path.join(a.out, "tiny.gguf"))


if __name__ == "__main__":
    sys.exit(main())
