"""Reference token ids from Hugging Face's tokenizers, for nce's parity tests of its tokenizers.

    PYTHONPATH=$(bash scripts/python_peers.sh tokenizers) /usr/bin/python3 scripts/tokenizer_reference.py \\
        sample --model $(bash scripts/pretrained.sh all-MiniLM-L6-v2) --name all-MiniLM-L6-v2
    PYTHONPATH=... /usr/bin/python3 scripts/tokenizer_reference.py full --model ... --name all-MiniLM-L6-v2 \\
        [--ids-out /tmp/full_ids.jsonl]

The same for XLM-RoBERTa's Unigram: --model $(bash scripts/pretrained.sh multilingual-e5-small-tokenizer)
--name multilingual-e5-small.

sample: writes tests/fixtures/tokenizer_reference/<name>.sample.jsonl, one JSON object a line,
  {"source", "text", "ids"}: ids with the special tokens and no truncation, for a few hundred
  texts: KorQuAD questions, answers and contexts, beer titles and answers (../shared/data),
  code, and hostile cases (accents, CJK, control characters, emoji, words over 100
  characters, empty and blank texts, mixed scripts, special tokens written in the text).
  The first line, {"truncation": N}, is the max_length whose truncated ids the script checked
  against HF's own truncation (the tests truncate the same way).
full: reads every text of ../shared/data (KorQuAD dev: each context, question and answer;
  beer Posts.xml: each row's Title and Body, as the XML parser decodes them), and writes
  tests/fixtures/tokenizer_reference/<name>.shared_digest.json: per source, the number of
  texts, of tokens, and an FNV-1a digest of each run of 100 texts' ids, which
  tests/test_pretrained_tokenizer.cpp recomputes with nce. --ids-out writes every text's ids.
"""
import argparse
import json
import os
import pathlib
import sys
import xml.etree.ElementTree as ElementTree

from tokenizers import Tokenizer

ROOT = pathlib.Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
FIXTURES = ROOT / "tests" / "fixtures" / "tokenizer_reference"
TRUNCATION = 16
CHUNK = 100


def load_tokenizer(model_dir):
    tokenizer = Tokenizer.from_file(str(pathlib.Path(model_dir) / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def korquad_texts():
    """(source, text) for every context, question and answer, in file order."""
    data = json.loads((SHARED / "korquad" / "KorQuAD_v1.0_dev.json").read_text(encoding="utf-8"))
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            yield "korquad-context", paragraph["context"]
            for qa in paragraph["qas"]:
                yield "korquad-question", qa["question"]
                for answer in qa["answers"]:
                    yield "korquad-answer", answer["text"]


def beer_texts():
    """(source, text) for every row's Title (when it has one) and Body, in file order."""
    for row in ElementTree.parse(SHARED / "stackexchange" / "beer" / "Posts.xml").getroot():
        if "Title" in row.attrib:
            yield "beer-title", row.attrib["Title"]
        if "Body" in row.attrib:
            yield "beer-body", row.attrib["Body"]


def code_texts():
    """Code from this repository: a few stretches of its C++, Python and shell."""
    for relative in ["data/tokenizer.cpp", "scripts/pretrained.sh"]:
        lines = (ROOT / relative).read_text(encoding="utf-8").splitlines()
        for start in range(0, 60, 10):
            yield "code", "\n".join(lines[start:start + 10])


HOSTILE = [
    "", " ", "   \t\n  ", "\n", "\u3000", "Café déjà vu", "naïve façade Ångström", "ÉCOLE ÉLÉMENTAIRE",
    "İstanbul ıi", "ß ẞ Straße", "ΣΊΣΥΦΟΣ σίσυφος", "Ꭰ Ꭱ",  # Turkish dotted I, sharp s, Greek final sigma, Cherokee
    "中文字符测试", "日本語のテキスト、カタカナ", "한국어 문장입니다. 띄어쓰기가없는문장", "漢字와 한글이 섞인 문장",
    "control\x00chars\x01here\x7f", "zero\u200bwidth\u200djoiner\ufeffbom", "tab\there\rcr\x0bvt\x0cff\x85nel",
    "private \ue000 use", "replacement \ufffd char", "emoji 😀🍺🇰🇷 👩‍👩‍👧", "new emoji 🥲🫠🪿",
    "a" * 99, "b" * 100, "c" * 101, "x" * 250, "supercalifragilisticexpialidocious" * 4,
    "word" + "é" * 98, "한" * 101, "[CLS] [SEP] [MASK] [PAD] [UNK]", "in[MASK]side", "[mask] lower", "<s>hi</s> a <mask> b<pad><unk>",
    "punctuation!!! ?? ... ,,, ;;; (parens) [brackets] {braces} <angles>", "$100 + 5% = ^_^ | ~ `",
    "„quotes“ «guillemets» ‘single’ — dash – en … ellipsis", "math ∑ ∫ √ ≠ ≤ × ÷", "x² H₂O ½ ①",
    "mixed Русский English 한국어 中文 العربية עברית हिन्दी ไทย", "combining e\u0301 a\u0308 o\u0302\u0323",
    "Hangul jamo \u1100\u1161\u11a8 compatibility ㄱㅏ", "full-width ＡＢＣ１２３", "ligature ﬁ ﬂ", "Å Å Å",
    "http://example.com/path?q=1&r=2#frag", "user@example.com", "C++ std::vector<int64_t> x{1, 2};",
    "def f(x):\n    return x ** 2  # square", "  leading and trailing  ", "multiple     spaces",
]


def sample_texts():
    korquad = list(korquad_texts())
    beer = list(beer_texts())
    picked = []
    for source, every, count in [("korquad-question", 97, 40), ("korquad-answer", 131, 30), ("korquad-context", 331, 2)]:
        texts = [text for s, text in korquad if s == source]
        picked += [(source, text) for text in texts[::every][:count]]
    for source, every, count in [("beer-title", 23, 30), ("beer-body", 401, 5)]:
        texts = [text for s, text in beer if s == source]
        picked += [(source, text) for text in texts[::every][:count]]
    picked += list(code_texts())
    picked += [("hostile", text) for text in HOSTILE]
    return picked


def check_truncation(tokenizer, text, ids):
    """HF's own truncation must equal what nce does: content cut, then the special tokens."""
    tokenizer.enable_truncation(max_length=TRUNCATION)
    truncated = tokenizer.encode(text).ids
    tokenizer.no_truncation()
    expected = ids if len(ids) <= TRUNCATION else ids[:TRUNCATION - 1] + ids[-1:]
    assert truncated == expected, f"truncation differs for {text[:60]!r}: {truncated} vs {expected}"


def write_sample(tokenizer, name):
    FIXTURES.mkdir(parents=True, exist_ok=True)
    path = FIXTURES / f"{name}.sample.jsonl"
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps({"truncation": TRUNCATION}) + "\n")
        for source, text in sample_texts():
            ids = tokenizer.encode(text).ids
            check_truncation(tokenizer, text, ids)
            out.write(json.dumps({"source": source, "text": text, "ids": ids}, ensure_ascii=False) + "\n")
    print(f"wrote {path} ({path.stat().st_size} bytes)")


def fnv1a(digest, ids):
    """64-bit FNV-1a over each id's 8 little-endian bytes, then a -1 that closes the text."""
    for value in list(ids) + [-1]:
        for byte in (value & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little"):
            digest = ((digest ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return digest


def write_full(tokenizer, name, ids_out):
    sources = {}
    out = open(ids_out, "w", encoding="utf-8") if ids_out else None
    for source, text in list(korquad_texts()) + list(beer_texts()):
        ids = tokenizer.encode(text).ids
        entry = sources.setdefault(source, {"texts": 0, "tokens": 0, "chunk_digests": []})
        if entry["texts"] % CHUNK == 0:
            entry["chunk_digests"].append(0xCBF29CE484222325)
        entry["chunk_digests"][-1] = fnv1a(entry["chunk_digests"][-1], ids)
        entry["texts"] += 1
        entry["tokens"] += len(ids)
        if out:
            out.write(json.dumps({"source": source, "ids": ids}) + "\n")
    for entry in sources.values():
        entry["chunk_digests"] = [f"{digest:016x}" for digest in entry["chunk_digests"]]
    FIXTURES.mkdir(parents=True, exist_ok=True)
    path = FIXTURES / f"{name}.shared_digest.json"
    path.write_text(json.dumps({"chunk": CHUNK, "sources": sources}, indent=1) + "\n", encoding="utf-8")
    total = sum(entry["texts"] for entry in sources.values())
    print(f"wrote {path}: {total} texts, " + ", ".join(f"{s} {e['texts']}" for s, e in sources.items()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["sample", "full"])
    parser.add_argument("--model", required=True, help="the model folder (with tokenizer.json)")
    parser.add_argument("--name", required=True, help="the fixture's name, e.g. all-MiniLM-L6-v2")
    parser.add_argument("--ids-out", help="full: also write every text's ids here (JSON lines)")
    args = parser.parse_args()
    if not SHARED.is_dir():
        sys.exit(f"tokenizer_reference: no {SHARED}; the shared data sets are needed")
    tokenizer = load_tokenizer(args.model)
    if args.mode == "sample":
        write_sample(tokenizer, args.name)
    else:
        write_full(tokenizer, args.name, args.ids_out)


if __name__ == "__main__":
    main()
