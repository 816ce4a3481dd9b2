// The vector store: chunk passages with overlap, encode, index with FAISS, search.
#include "retrieval/index/passage_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "engine/npy.h"
#include "retrieval/model/text_model.h"
#include "retrieval/model/tokenizer_fingerprint.h"
#include "engine/atomic_file.h"
#include "engine/error.h"
#include "engine/json_nesting.h"
#include "eval/faiss_index.h"

namespace nce::retrieval {
namespace {

namespace fs = std::filesystem;

// Copies a file into place through a temporary name, so a reader never sees half of it.
void copy_into_index(const std::string& from, const std::string& to) {
    NCE_CHECK(fs::is_regular_file(from), "index: {} is missing (train first, or pass --checkpoint)", from);
    nce::copy_file_atomically(from, to, "index");
}

// The first `limit` code points of `text` (UTF-8), with "..." when cut.
std::string shortened(const std::string& text, int64_t limit) {
    int64_t points = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
            if (points == limit) return text.substr(0, i) + "...";
            ++points;
        }
    }
    return text;
}

// The byte ranges [begin, end) of a text's own pieces, the special tokens left out. A long text
// is tokenized in blocks of about kBlockBytes, each cut just before a whitespace byte, where no
// piece of a SentencePiece, WordPiece or byte-level BPE tokenizer runs across: the pieces are
// those of the whole text, while the tokenizer's working memory is that of one block (a
// 48 MB line read at once took 12 GB). A block with no whitespace in twice its size is cut at
// a character boundary instead: a run of characters the model does not know is one piece
// whose cost grows with the square of its length inside SentencePiece (1 MB of CJK
// ideographs without a space took 5 minutes), so no run longer than a block reaches it.
struct PieceBytes {
    std::vector<int64_t> begin, end;
};

PieceBytes text_piece_bytes(const data::Tokenizer& tokenizer, const std::string& text) {
    constexpr size_t kBlockBytes = size_t{1} << 16;
    const data::Tokenizer::SpecialTokens specials = tokenizer.special_tokens();
    PieceBytes bytes;
    for (size_t start = 0; start < text.size();) {
        size_t stop = text.size();
        if (stop - start > kBlockBytes) {
            stop = std::min(stop, text.find_first_of(" \t\n\r", start + kBlockBytes));
            if (stop - start > 2 * kBlockBytes) {
                stop = start + kBlockBytes;
                while ((static_cast<unsigned char>(text[stop]) & 0xC0) == 0x80) --stop;  // not inside a UTF-8 character
            }
        }
        data::Tokenizer::PiecesWithOffsets pieces = tokenizer.encode_with_offsets(text.substr(start, stop - start));
        const int64_t own_end = static_cast<int64_t>(pieces.ids.size()) - specials.after;
        for (int64_t i = specials.before; i < own_end; ++i) {
            bytes.begin.push_back(static_cast<int64_t>(start) + pieces.begin[static_cast<size_t>(i)]);
            bytes.end.push_back(static_cast<int64_t>(start) + pieces.end[static_cast<size_t>(i)]);
        }
        start = stop;
    }
    return bytes;
}

}  // namespace

std::vector<PassageChunk> chunk_passages(const std::vector<data::Passage>& passages, const data::Tokenizer& tokenizer,
                                         int64_t max_tokens, int64_t overlap) {
    NCE_CHECK(max_tokens > 0 && overlap >= 0 && overlap < max_tokens,
              "index: the chunk overlap must be in [0, {}) tokens (the window), got {}", max_tokens, overlap);
    std::vector<PassageChunk> chunks;
    for (size_t index = 0; index < passages.size(); ++index) {
        const data::Passage& passage = passages[index];
        const PieceBytes pieces = text_piece_bytes(tokenizer, passage.text);
        const int64_t total = static_cast<int64_t>(pieces.begin.size());
        if (total <= 0) continue;  // nothing to find
        int64_t passage_index = static_cast<int64_t>(index);
        if (total <= max_tokens) {
            chunks.push_back({passage_index, passage.id, passage.group, passage.text, 0,
                              static_cast<int64_t>(passage.text.size())});
            continue;
        }
        // Window [start, end) of pieces is the text from its first piece's first byte to its
        // last piece's last byte: the passage's own words, never a re-decoding of them.
        for (int64_t start = 0;; start += max_tokens - overlap) {
            int64_t end = std::min(total, start + max_tokens);
            int64_t begin_byte = pieces.begin[static_cast<size_t>(start)];
            int64_t end_byte = std::max(begin_byte, pieces.end[static_cast<size_t>(end - 1)]);
            std::string text = passage.text.substr(static_cast<size_t>(begin_byte), static_cast<size_t>(end_byte - begin_byte));
            if (text.find_first_not_of(" \t\n\r") != std::string::npos)
                chunks.push_back({passage_index, passage.id, passage.group, std::move(text), begin_byte, end_byte});
            if (end == total) break;
        }
    }
    return chunks;
}

int64_t passage_window(const data::Tokenizer& tokenizer, const std::string& passage_prompt, int64_t max_passage_length,
                       int64_t overlap) {
    const data::Tokenizer::SpecialTokens specials = tokenizer.special_tokens();
    int64_t window = max_passage_length - specials.before - specials.after - prompt_tokens(tokenizer, passage_prompt);
    NCE_CHECK(window > overlap, "the passage prompt \"{}\" and the special tokens take {} of the {} passage tokens, "
              "leaving {} for the text, not more than the {} tokens of chunk overlap; use a shorter --passage-prompt "
              "or a larger --max-passage-length", passage_prompt, max_passage_length - window, max_passage_length,
              window, overlap);
    return window;
}

IndexSummary build_passage_index(const std::string& index_dir, nn::EmbeddingModel& model,
                                 const data::Tokenizer& tokenizer, const std::vector<data::Passage>& passages,
                                 const RunConfig& config, int64_t overlap, const std::string& model_path,
                                 const std::string& tokenizer_path, eval::LexicalTokens bm25_tokens,
                                 std::optional<double> dense_weight) {
    auto start = std::chrono::steady_clock::now();
    NCE_CHECK(!passages.empty(), "index: the corpus is empty (no passages in the data); check --data");
    const std::string& passage_prompt = model.config().passage_prompt;
    std::vector<PassageChunk> chunks = chunk_passages(
        passages, tokenizer, passage_window(tokenizer, passage_prompt, config.max_passage_length, overlap), overlap);
    NCE_CHECK(!chunks.empty(), "index: no passage gives a token; check --data");
    std::vector<std::string> texts;  // chunks.jsonl keeps the chunks' own text; the model reads the prompt too
    for (const PassageChunk& chunk : chunks) texts.push_back(chunk.text);
    texts = with_prompt(passage_prompt, std::move(texts));
    Tensor embeddings = truncate_embeddings(
        encode_texts(model, tokenizer, texts, config.max_passage_length, config.encode_batch_size), config.truncate_dim);
    eval::FaissIndex index = eval::FaissIndex::build(embeddings);

    std::error_code error;
    fs::remove(fs::path(index_dir) / "index.json", error);  // the folder is incomplete until it is written again
    fs::create_directories(index_dir, error);
    NCE_CHECK(!error && fs::is_directory(index_dir), "--index {}: cannot create the folder; choose another path", index_dir);
    index.save((fs::path(index_dir) / "index.faiss").string());
    write_npy((fs::path(index_dir) / "embeddings.npy").string(), embeddings);
    std::string lines;
    for (const PassageChunk& chunk : chunks)
        lines += nlohmann::json{{"passage_id", chunk.passage_id}, {"group", chunk.group}, {"text", chunk.text}}.dump() + "\n";
    write_text_file_atomically((fs::path(index_dir) / "chunks.jsonl").string(), lines);
    copy_into_index(model_path, (fs::path(index_dir) / "model.safetensors").string());
    if (fs::path(tokenizer_path).filename() == "tokenizer.model") {
        copy_into_index(tokenizer_path, (fs::path(index_dir) / "tokenizer.model").string());
    } else {  // a pretrained model's tokenizer: its folder's files
        fs::remove(fs::path(index_dir) / "tokenizer.model", error);
        copy_tokenizer_files(fs::path(tokenizer_path).parent_path().string(), (fs::path(index_dir) / "tokenizer").string());
    }

    IndexSummary summary;
    summary.passages = static_cast<int64_t>(passages.size());
    summary.chunks = static_cast<int64_t>(chunks.size());
    for (size_t i = 0; i < chunks.size(); ++i)
        if (i > 0 && chunks[i].passage == chunks[i - 1].passage && (i < 2 || chunks[i - 2].passage != chunks[i].passage))
            ++summary.passages_split;
    nlohmann::json facts = {{"max_query_length", config.max_query_length},
                            {"max_passage_length", config.max_passage_length},
                            {"query_prompt", model.config().query_prompt},
                            {"passage_prompt", passage_prompt},
                            {"overlap", overlap},
                            {"truncate_dim", config.truncate_dim},
                            {"chunks", summary.chunks},
                            {"passages", summary.passages},
                            {"passages_split", summary.passages_split},
                            {"bm25", {{"tokens", eval::lexical_tokens_name(bm25_tokens)},
                                      {"k1", config.bm25_k1},
                                      {"b", config.bm25_b}}}};
    if (dense_weight) facts["dense_weight"] = *dense_weight;
    write_text_file_atomically((fs::path(index_dir) / "index.json").string(), facts.dump(2) + "\n");
    summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return summary;
}

Ranker parse_ranker(const std::string& name) {
    if (name == "dense") return Ranker::Dense;
    if (name == "bm25") return Ranker::Bm25;
    if (name == "hybrid") return Ranker::Hybrid;
    fail("search: unknown ranker '{}'; use dense, bm25 or hybrid", name);
}

namespace {

eval::LexicalTokens parse_lexical_tokens(const std::string& name, const std::string& index_dir) {
    for (eval::LexicalTokens tokens :
         {eval::LexicalTokens::Whitespace, eval::LexicalTokens::WhitespaceAndBigrams, eval::LexicalTokens::CodeIdentifiers})
        if (name == eval::lexical_tokens_name(tokens)) return tokens;
    fail("--index {}: index.json names BM25 tokens '{}', which nce does not know; rebuild the index", index_dir, name);
}

}  // namespace

SearchResult search_passage_index(const std::string& index_dir, const std::string& query, int64_t k, Ranker ranker) {
    fs::path folder(index_dir);
    NCE_CHECK(fs::is_regular_file(folder / "index.json"),
              "--index {}: not a complete index folder (no index.json); build one with the index command of the app "
              "that trained the model (nce korquad|stackexchange|code|train index)", index_dir);
    NCE_CHECK(k > 0, "search: --top-k must be positive, got {}", k);
    nlohmann::json facts;
    std::ifstream facts_file(folder / "index.json");
    std::string facts_text{std::istreambuf_iterator<char>(facts_file), std::istreambuf_iterator<char>()};
    // The user names the folder, so its JSON is untrusted: a deep nesting is refused before
    // the parser walks it (here and for each line of chunks.jsonl below).
    check_json_nesting(facts_text, fmt::format("--index {}: index.json", index_dir));
    try {
        facts = nlohmann::json::parse(facts_text);
        facts.at("max_query_length").get<int64_t>();
    } catch (const nlohmann::json::exception&) {
        fail("--index {}: index.json is malformed; rebuild the index (nce korquad|stackexchange|code|train index)",
             index_dir);
    }
    int64_t max_query_length = facts.at("max_query_length").get<int64_t>();
    std::string tokenizer_path = tokenizer_beside(index_dir);
    NCE_CHECK(!tokenizer_path.empty(), "--index {}: no tokenizer in it; rebuild the index", index_dir);
    data::Tokenizer tokenizer = data::Tokenizer::load(tokenizer_path);
    std::unique_ptr<nn::EmbeddingModel> model = load_text_encoder((folder / "model.safetensors").string());
    check_tokenizer_matches(tokenizer, *model, (folder / "model.safetensors").string());
    std::vector<nlohmann::json> chunks;
    {
        std::ifstream file(folder / "chunks.jsonl");
        NCE_CHECK(file.good(), "--index {}: chunks.jsonl is missing; rebuild the index", index_dir);
        std::string line;
        while (std::getline(file, line)) {
            check_json_nesting(line, fmt::format("--index {}: chunks.jsonl line {}", index_dir, chunks.size() + 1));
            try {
                chunks.push_back(nlohmann::json::parse(line));
            } catch (const nlohmann::json::exception&) {
                fail("--index {}: chunks.jsonl line {} is not JSON; rebuild the index", index_dir, chunks.size() + 1);
            }
        }
    }
    eval::FaissIndex index = eval::FaissIndex::load((folder / "index.faiss").string());
    NCE_CHECK(index.size() == static_cast<int64_t>(chunks.size()),
              "--index {}: index.faiss holds {} vectors but chunks.jsonl {} lines; rebuild the index", index_dir,
              index.size(), chunks.size());
    NCE_CHECK(!query.empty(), "search: the query is empty; give the question in quotes");
    TruncationCount count;  // the model's reading of the query; BM25 reads it whole
    // The hybrid fuses each ranker's candidates: as deep as the apps' evaluation reads them.
    const int64_t depth = std::min<int64_t>(ranker == Ranker::Hybrid ? std::max<int64_t>(k, 100) : k, index.size());
    eval::RankedLists dense;
    if (ranker != Ranker::Bm25) {
        // The query as the indexed model reads queries: its own query prompt in front. An index
        // built with --truncate-dim holds the embeddings' first numbers; the query matches.
        Tensor embedding = truncate_embeddings(encode_texts(*model, tokenizer,
                                                            with_prompt(model->config().query_prompt, {query}),
                                                            max_query_length, 1, &count),
                                               facts.value("truncate_dim", int64_t{0}));
        eval::TopK top = index.search(embedding, depth);
        std::vector<int64_t> ids = top.indices.to_indices();
        std::vector<double> scores = top.scores.to_vector();
        dense.passages.emplace_back();
        dense.scores.emplace_back();
        for (size_t i = 0; i < ids.size(); ++i)
            if (ids[i] >= 0) dense.passages[0].push_back(ids[i]), dense.scores[0].push_back(scores[i]);
    }
    eval::RankedLists ranked = dense;
    if (ranker != Ranker::Dense) {
        NCE_CHECK(facts.contains("bm25"), "--index {}: it was built before search could rank by BM25; rebuild it "
                  "to use --ranker {}", index_dir, ranker == Ranker::Bm25 ? "bm25" : "hybrid");
        NCE_CHECK(ranker != Ranker::Hybrid || facts.contains("dense_weight"),
                  "--index {}: no hybrid weight (the run that trained the model wrote no results.json beside it); "
                  "use --ranker dense or bm25", index_dir);
        std::vector<std::string> texts;
        for (const nlohmann::json& chunk : chunks) texts.push_back(chunk.value("text", ""));
        const nlohmann::json& bm25 = facts.at("bm25");
        eval::RankedLists lexical = eval::bm25_rankings(
            {query}, texts, parse_lexical_tokens(bm25.value("tokens", ""), index_dir),
            eval::Bm25Parameters{bm25.value("k1", 1.5), bm25.value("b", 0.75)}, depth);
        ranked = ranker == Ranker::Bm25 ? lexical : eval::fuse_rankings(lexical, dense, facts.at("dense_weight").get<double>());
    }
    SearchResult result;
    result.query_truncated = count.truncated > 0;
    for (size_t i = 0; i < ranked.passages[0].size() && static_cast<int64_t>(i) < k; ++i) {
        const nlohmann::json& chunk = chunks[static_cast<size_t>(ranked.passages[0][i])];
        result.hits.push_back({ranked.scores[0][i], chunk.value("passage_id", ""), chunk.value("group", ""),
                               chunk.value("text", "")});
    }
    return result;
}

void print_search_result(const SearchResult& result, int64_t max_characters) {
    if (result.query_truncated) fmt::print("(the query was longer than the model's maximum length and was truncated)\n");
    for (size_t i = 0; i < result.hits.size(); ++i) {
        const SearchHit& hit = result.hits[i];
        fmt::print("{:>2}. {:.4f}  {}\n    {}\n", i + 1, hit.score, hit.passage_id, shortened(hit.text, max_characters));
    }
}

}  // namespace nce::retrieval
