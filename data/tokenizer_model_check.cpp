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

}  // namespace

void check_tokenizer_model(std::string_view bytes, const std::string& path) {
    WireReader reader(bytes, 0, "the model", path);
    size_t pieces = 0;
    while (!reader.done()) {
        const size_t field_start = reader.offset();
        const Field field = reader.next();
        if (field.number != 1) continue;  // the specs and anything newer: protobuf's to check
        if (field.wire_type != kLengthDelimited) {
            reader.refuse(field_start, std::string("field 1 (a piece) is ") + wire_type_name(field.wire_type) +
                                           ", not a length-delimited message");
        }
        if (pieces == kMaxTokenizerPieces) {
            reader.refuse(field_start, "more than " + std::to_string(kMaxTokenizerPieces) + " pieces");
        }
        check_piece(field.bytes, reader.offset_of(field), pieces, path);
        ++pieces;
    }
}

}  // namespace nce::data
