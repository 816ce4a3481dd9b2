#include "data/tokenizer_model_check.h"

#include <cstdint>

#include "engine/error.h"

namespace nce::data {
namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

const char* wire_type_name(uint32_t wire_type) {
    switch (wire_type) {
        case kVarint: return "a varint";
        case kFixed64: return "8 bytes";
        case kLengthDelimited: return "length-delimited";
        case kFixed32: return "4 bytes";
        default: return "a group or an unknown wire type";
    }
}

struct Field {
    uint32_t number = 0;
    uint32_t wire_type = 0;
    std::string_view bytes;  // the value's bytes (for a varint, its encoding)
};

// Reads one message's fields in order. `base` is the message's offset in the file and `where`
// names it ("the model", "piece 12"), both for the error line.
class WireReader {
public:
    WireReader(std::string_view bytes, size_t base, std::string where, const std::string& path)
        : bytes_(bytes), base_(base), where_(std::move(where)), path_(path) {}

    bool done() const { return position_ == bytes_.size(); }
    size_t offset() const { return base_ + position_; }  // in the file

    Field next() {
        const size_t start = position_;
        const uint64_t tag = varint("a field tag");
        Field field;
        field.number = static_cast<uint32_t>(tag >> 3);
        field.wire_type = static_cast<uint32_t>(tag & 7);
        if (field.number == 0 || (tag >> 3) > 0x1FFFFFFF) refuse(start, "a field number out of range");
        switch (field.wire_type) {
            case kVarint: {
                const size_t value_start = position_;
                varint("a varint value");
                field.bytes = bytes_.substr(value_start, position_ - value_start);
                break;
            }
            case kFixed64: field.bytes = take(8, "an 8-byte value"); break;
            case kFixed32: field.bytes = take(4, "a 4-byte value"); break;
            case kLengthDelimited: {
                const size_t length_start = position_;
                const uint64_t length = varint("a length");
                if (length > bytes_.size() - position_) {
                    refuse(length_start, "field " + std::to_string(field.number) + " says " + std::to_string(length) +
                                             " bytes, but only " + std::to_string(bytes_.size() - position_) +
                                             " remain (a truncated file?)");
                }
                field.bytes = take(length, "a length-delimited value");
                break;
            }
            default:
                refuse(start, "field " + std::to_string(field.number) + " has wire type " +
                                  std::to_string(field.wire_type) + ", a group or unknown");
        }
        return field;
    }

    // The file offset of `field`'s value (it lies in this message's bytes).
    size_t offset_of(const Field& field) const { return base_ + static_cast<size_t>(field.bytes.data() - bytes_.data()); }

    [[noreturn]] void refuse(size_t position, const std::string& problem) const {
        fail("tokenizer load: '{}' is not a SentencePiece model ({}: {}, at byte {}); pass a tokenizer.model "
             "written by training",
             path_, where_, problem, base_ + position);
    }

private:
    // Protobuf's base-128 varint: at most 10 bytes, the 10th holding only the 64th bit (so it
    // ends there).
    uint64_t varint(const char* what) {
        const size_t start = position_;
        uint64_t value = 0;
        for (int shift = 0;; shift += 7) {
            if (position_ == bytes_.size()) refuse(start, std::string(what) + " runs past the end (a truncated file?)");
            const auto byte = static_cast<uint8_t>(bytes_[position_++]);
            if (shift == 63 && byte > 1) refuse(start, std::string(what) + " is a varint longer than 64 bits");
            value |= static_cast<uint64_t>(byte & 0x7F) << shift;
            if ((byte & 0x80) == 0) return value;
        }
    }

    std::string_view take(uint64_t count, const char* what) {
        if (count > bytes_.size() - position_) {
            refuse(position_, std::string(what) + " runs past the end (a truncated file?)");
        }
        std::string_view value = bytes_.substr(position_, count);
        position_ += count;
        return value;
    }

    std::string_view bytes_;
    size_t base_;
    std::string where_;
    const std::string& path_;
    size_t position_ = 0;
};

// One SentencePiece message: its string (field 1; the last one counts, as in protobuf) must be
// present, non-empty and free of NUL bytes (SentencePiece's trie takes C strings: a leading NUL
// is a zero-length key, which terminates the process); score and type must have their types.
void check_piece(std::string_view message, size_t base, size_t index, const std::string& path) {
    WireReader reader(message, base, "piece " + std::to_string(index), path);
    bool has_string = false;
    std::string_view piece;
    size_t piece_offset = base;
    while (!reader.done()) {
        const size_t field_start = reader.offset() - base;
        const Field field = reader.next();
        const uint32_t expected = field.number == 1 ? kLengthDelimited : field.number == 2 ? kFixed32 : kVarint;
        if (field.number <= 3 && field.wire_type != expected) {
            const char* name = field.number == 1 ? "its string" : field.number == 2 ? "its score" : "its type";
            reader.refuse(field_start, "field " + std::to_string(field.number) + " (" + name + ") is " +
                                           wire_type_name(field.wire_type) + ", not " + wire_type_name(expected));
        }
        if (field.number == 1) {
            has_string = true;
            piece = field.bytes;
            piece_offset = reader.offset_of(field);
        }
    }
    if (!has_string) reader.refuse(0, "it has no string");
    if (piece.empty()) reader.refuse(piece_offset - base, "its string is empty");
    const size_t nul = piece.find('\0');
    if (nul != std::string_view::npos) reader.refuse(piece_offset - base + nul, "its string holds a NUL byte");
}

// A 4-byte little-endian number (the byte order SentencePiece writes on every common machine).
uint32_t little_endian_u32(std::string_view bytes, size_t at) {
    uint32_t value = 0;
    for (size_t i = 0; i < 4; ++i) value |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + i])) << (8 * i);
    return value;
}

// A unit of Darts-clone's double array: bit 31 set marks a leaf that holds a value (bits 0-30);
// otherwise bits 0-7 are its label, bit 8 says it has a leaf, and bits 10-31 are the offset to its
// children, shifted left by 8 when bit 9 is set.
uint32_t darts_offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

// A precompiled_charsmap: a 4-byte size, that many bytes of Darts trie (4-byte units), then the
// normalized strings the trie's values index. SentencePiece walks the trie without bounds
// checks (a unit at p has its children at (p ^ offset) ^ byte and its leaf at p ^ offset; a
// leaf's value is read as the start of a string), so a broken one makes it read far outside
// the file and crash. Every unit a walk can pass through (the root, and every unit that is not
// a leaf) must point to a block of 256 units inside the trie, and its leaf, if it has one, into
// the strings. The rules SentencePiece builds (nmt_nfkc, nfkc, their _cf forms) all do.
void check_charsmap(std::string_view charsmap, const WireReader& reader, size_t at) {
    if (charsmap.empty()) return;  // no rules: text is left as it is
    const std::string broken = "its normalization rules (precompiled_charsmap) are broken: ";
    if (charsmap.size() < 4) reader.refuse(at, broken + "they are shorter than their 4-byte trie size");
    const size_t trie_bytes = little_endian_u32(charsmap, 0);
    if (trie_bytes == 0 || trie_bytes % 4 != 0 || trie_bytes > charsmap.size() - 4) {
        reader.refuse(at, broken + "a trie of " + std::to_string(trie_bytes) + " bytes in " +
                              std::to_string(charsmap.size() - 4) + " (not a positive multiple of 4 that fits)");
    }
    const std::string_view trie = charsmap.substr(4, trie_bytes);
    const size_t units = trie_bytes / 4;
    const size_t strings_bytes = charsmap.size() - 4 - trie_bytes;
    for (size_t p = 0; p < units; ++p) {
        const uint32_t unit = little_endian_u32(trie, 4 * p);
        if (p != 0 && (unit >> 31) != 0) continue;  // a leaf: a walk reads its value, never walks on
        const size_t children = p ^ darts_offset(unit);
        if ((children | 0xFF) >= units) {
            reader.refuse(at, broken + "trie unit " + std::to_string(p) + " points outside the trie's " +
                                  std::to_string(units) + " units");
        }
        const bool has_leaf = ((unit >> 8) & 1) != 0;
        if (has_leaf && (little_endian_u32(trie, 4 * children) & 0x7FFFFFFF) >= strings_bytes) {
            reader.refuse(at, broken + "trie unit " + std::to_string(p) + "'s value points outside the " +
                                  std::to_string(strings_bytes) + " bytes of normalized strings");
        }
    }
}

// A NormalizerSpec (the model's normalizer_spec or denormalizer_spec): its rules, field 2, if
// any. Protobuf merges repeated occurrences; each is checked.
void check_normalizer(std::string_view message, size_t base, const char* name, const std::string& path) {
    WireReader reader(message, base, name, path);
    while (!reader.done()) {
        const size_t field_start = reader.offset() - base;
        const Field field = reader.next();
        if (field.number != 2) continue;
        if (field.wire_type != kLengthDelimited) {
            reader.refuse(field_start, std::string("field 2 (precompiled_charsmap) is ") +
                                           wire_type_name(field.wire_type) + ", not length-delimited");
        }
        check_charsmap(field.bytes, reader, reader.offset_of(field) - base);
    }
}

}  // namespace

void check_tokenizer_model(std::string_view bytes, const std::string& path) {
    WireReader reader(bytes, 0, "the model", path);
    size_t pieces = 0;
    while (!reader.done()) {
        const size_t field_start = reader.offset();
        const Field field = reader.next();
        const char* name = field.number == 1   ? "a piece"
                           : field.number == 3 ? "the normalizer spec"
                           : field.number == 5 ? "the denormalizer spec"
                                               : nullptr;
        if (name == nullptr) continue;  // the trainer spec, self-test data, anything newer: protobuf's to check
        if (field.wire_type != kLengthDelimited) {
            reader.refuse(field_start, "field " + std::to_string(field.number) + " (" + name + ") is " +
                                           wire_type_name(field.wire_type) + ", not a length-delimited message");
        }
        if (field.number != 1) {
            check_normalizer(field.bytes, reader.offset_of(field), name, path);
            continue;
        }
        if (pieces == kMaxTokenizerPieces) {
            reader.refuse(field_start, "more than " + std::to_string(kMaxTokenizerPieces) + " pieces");
        }
        check_piece(field.bytes, reader.offset_of(field), pieces, path);
        ++pieces;
    }
}

}  // namespace nce::data
