"""The tiny tokenizers of the architecture golden tests (make_arch_golden.py), trained with the
`tokenizers` library on TRAINING_TEXT below and committed as tokenizer.json (they are not weights).

- qwen3: byte-level BPE with Qwen2's pre-tokenizer (the Split regex + ByteLevel(use_regex=False)
  of Qwen2/Qwen3's tokenizer.json, which novaserve convert maps to tokenizer.ggml.pre = "qwen2"),
  an NFC normalizer and the <|endoftext|>, <|im_start|>, <|im_end|> special tokens; no BOS.
- phi3: Llama 2 / Phi-3 style SentencePiece BPE: <unk>, <s>, </s> at ids 0..2, the 256 byte
  tokens <0x00>..<0xFF> at 3..258, then pieces; byte_fallback, normalizer Prepend("▁") +
  Replace(" ", "▁"), no pre-tokenizer, a TemplateProcessing that adds <s>, and Phi-3's chat
  tokens <|endoftext|>, <|user|>, <|assistant|>, <|end|> as special added tokens. The merges list
  is rebuilt the way HF's SentencePiece converter writes it (every split of every piece into two
  pieces, ranked by the joined piece's score), so HF's BPE and SentencePiece's highest-score-first
  merging give the same tokens.
"""

from __future__ import annotations

import json

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers import trainers

# Qwen2 / Qwen3 tokenizer.json's Split pattern (JSON-decoded).
QWEN2_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SPACE = "\u2581"

TRAINING_TEXT = """\
The quick brown fox jumps over the lazy dog. The dog sleeps in the sun, and the fox runs into
the forest. A small model reads the text one token at a time and predicts the next token.
The capital of France is Paris. The capital of Italy is Rome. The capital of Japan is Tokyo.
Once upon a time there was a little robot who wanted to learn how to write stories about the
sea, the mountains and the stars. Every morning the robot counted: one, two, three, four, five.
def add(a, b):
    return a + b

print(add(2, 3))  # prints 5
for i in range(10):
    print(i * i)
The weather today is sunny with a light wind from the west; tomorrow it will rain in the north.
She said: "Hello, world!" and he answered: "Good morning, how are you?"
Numbers like 42, 1234 and 3.14159 appear in the text, as do dates such as 2024-05-17.
The server answers requests, the engine schedules sequences, and the model computes logits.
"""

QWEN3_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
PHI3_CONTROL = ["<unk>", "<s>", "</s>"]
PHI3_CHAT = ["<|endoftext|>", "<|user|>", "<|assistant|>", "<|end|>"]


def _lines() -> list[str]:
    return TRAINING_TEXT.splitlines(keepends=True)


def make_qwen3_tokenizer(vocab_size: int) -> Tokenizer:
    """Byte-level BPE of exactly `vocab_size` tokens: specials first, then the 256 bytes, merges."""
    tok = Tokenizer(models.BPE(ignore_merges=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=1,
        special_tokens=QWEN3_SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_lines(), trainer=trainer)
    if tok.get_vocab_size() != vocab_size:
        raise RuntimeError(f"qwen3 tokenizer has {tok.get_vocab_size()} tokens, not {vocab_size}")
    return tok


def _spm_merges(vocab: dict[str, int], ranked: list[str]) -> list[tuple[str, str]]:
    """HF's SentencePiece-to-BPE merges: for each piece of `ranked` (best score first), every
    split into two tokens of `vocab`, the splits of one piece ordered by the parts' ids."""
    merges = []
    for piece in ranked:
        local = []
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in vocab and right in vocab:
                local.append((vocab[left], vocab[right], left, right))
        merges.extend((l, r) for _, _, l, r in sorted(local))
    return merges


def make_phi3_tokenizer(vocab_size: int) -> Tokenizer:
    """SentencePiece-style BPE of exactly `vocab_size` tokens (layout in the module docstring)."""
    n_pieces = vocab_size - len(PHI3_CONTROL) - 256 - len(PHI3_CHAT)
    # 1. Learn pieces with a plain BPE trainer on whitespace-split text, each word starting with
    #    "▁" as SentencePiece sees it; the learned ids are the merge order (most frequent first).
    learner = Tokenizer(models.BPE())
    learner.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="always",
                                                     split=True)
    trainer = trainers.BpeTrainer(vocab_size=100000, min_frequency=1, show_progress=False,
                                  max_token_length=12)
    learner.train_from_iterator([line.rstrip("\n") for line in _lines()], trainer=trainer)
    learned = [t for t, _ in sorted(learner.get_vocab().items(), key=lambda kv: kv[1])]
    singles = [t for t in learned if len(t) == 1]
    merged = [t for t in learned if len(t) > 1][: n_pieces - len(singles)]
    if len(singles) + len(merged) != n_pieces:
        raise RuntimeError(f"phi3 tokenizer learned {len(singles) + len(merged)} pieces, "
                           f"need {n_pieces}")
    # 2. The SentencePiece layout: control tokens, bytes, single characters, learned pieces.
    vocab = {t: i for i, t in enumerate(PHI3_CONTROL)}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for piece in singles + merged:
        vocab[piece] = len(vocab)
    model = models.BPE(vocab=vocab, merges=_spm_merges(vocab, merged), unk_token="<unk>",
                       fuse_unk=True, byte_fallback=True, ignore_merges=False)
    tok = Tokenizer(model)
    tok.normalizer = normalizers.Sequence(
        [normalizers.Prepend(SPACE), normalizers.Replace(" ", SPACE)])
    tok.pre_tokenizer = None
    tok.decoder = decoders.Sequence(
        [decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse(),
         decoders.Strip(" ", 1, 0)]
    )
    tok.add_special_tokens(PHI3_CONTROL)
    tok.add_special_tokens(PHI3_CHAT)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)]
    )
    if tok.get_vocab_size() != vocab_size:
        raise RuntimeError(f"phi3 tokenizer has {tok.get_vocab_size()} tokens, not {vocab_size}")
    return tok


def tokenizer_config(arch: str) -> dict:
    """tokenizer_config.json for the tiny tokenizers (PreTrainedTokenizerFast over tokenizer.json)."""
    if arch == "qwen3":
        return {"tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": False,
                "add_eos_token": False, "bos_token": None, "eos_token": "<|im_end|>",
                "pad_token": "<|endoftext|>", "model_max_length": 256}
    return {"tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": True,
            "add_eos_token": False, "bos_token": "<s>", "eos_token": "<|endoftext|>",
            "unk_token": "<unk>", "pad_token": "<|endoftext|>", "model_max_length": 512}


def tokenizer_json_text(tok: Tokenizer) -> str:
    return json.dumps(json.loads(tok.to_str()), ensure_ascii=False, indent=1) + "\n"
