// The .npy format (NumPy's numpy/lib/format.py documents it):
//
//   bytes 0-5   magic "\x93NUMPY"
//   bytes 6-7   version major, minor: 1.0, 2.0 or 3.0
//   then        header length, little-endian: 2 bytes (1.0) or 4 bytes (2.0, 3.0)
//   then        the header: a Python dict literal, padded with spaces and ending in '\n',
//                 {'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }
//   then        the data, row-major (C order) when fortran_order is False
//
// NumPy pads the header so the data starts at a multiple of 64 bytes. Version 3.0 differs
// from 2.0 only in allowing UTF-8 in the header, which no supported dtype needs.
#include "engine/npy.h"

#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>

#include "engine/atomic_file.h"

namespace nce {
namespace {

static_assert(std::endian::native == std::endian::little,
              "npy.cpp reads and writes little-endian data with plain copies");

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::size_t kAlignment = 64;       // the data starts at a multiple of this
constexpr std::size_t kGrowthAxisDigits = 21;  // NumPy leaves room for the first size to grow to this many digits

// `text` with non-printable bytes written as \xNN, so that a message stays one line.
std::string printable(std::string_view text) {
    std::string shown;
    for (char byte : text) {
        unsigned char c = static_cast<unsigned char>(byte);
        shown += (c >= 0x20 && c < 0x7f) ? std::string(1, byte) : fmt::format("\\x{:02x}", c);
    }
    return shown;
}

// Up to 24 characters of `text` from `position`: where a header stops making sense.
std::string excerpt(std::string_view text, std::size_t position) {
    if (position >= text.size()) return "<end of header>";
    return printable(text.substr(position, 24));
}

// ---- reading the header dict ----

struct Header {
    std::string descr;
    bool fortran_order = false;
    Shape shape;
};

// A recursive-descent reader for the small part of Python literal syntax that .npy headers
// use: a dict of string keys to strings, True/False, and tuples of non-negative integers.
class HeaderParser {
public:
    HeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

    Header parse() {
        Header header;
        bool has_descr = false, has_fortran_order = false, has_shape = false;
        expect('{');
        while (!accept('}')) {
            std::string key = read_string("a key");
            expect(':');
            if (key == "descr") {
                skip_spaces();
                NCE_CHECK(peek() == '\'' || peek() == '"',
                          "read_npy: '{}': descr must be a dtype string like '<f8', found \"{}\" (structured dtypes "
                          "are not supported)",
                          path_, excerpt(text_, position_));
                header.descr = read_string("the descr");
                has_descr = true;
            } else if (key == "fortran_order") {
                header.fortran_order = read_bool("fortran_order");
                has_fortran_order = true;
            } else if (key == "shape") {
                header.shape = read_shape();
                has_shape = true;
            } else {
                fail("read_npy: '{}': unexpected key '{}' in the header (expected descr, fortran_order, shape)", path_,
                     printable(key));
            }
            if (!accept(',')) {
                expect('}');
                break;
            }
        }
        skip_spaces();
        NCE_CHECK(position_ == text_.size(), "read_npy: '{}': unexpected text after the header dict: \"{}\"", path_,
                  excerpt(text_, position_));
        NCE_CHECK(has_descr && has_fortran_order && has_shape,
                  "read_npy: '{}': the header lacks {}", path_,
                  !has_descr ? "'descr'" : !has_fortran_order ? "'fortran_order'" : "'shape'");
        return header;
    }

private:
    void skip_spaces() {
        while (position_ < text_.size() && (text_[position_] == ' ' || text_[position_] == '\n' ||
                                            text_[position_] == '\t' || text_[position_] == '\r'))
            ++position_;
    }
    char peek() const { return position_ < text_.size() ? text_[position_] : '\0'; }

    // Consumes `c` (after spaces) if it is next.
    bool accept(char c) {
        skip_spaces();
        if (peek() != c) return false;
        ++position_;
        return true;
    }
    void expect(char c) {
        NCE_CHECK(accept(c), "read_npy: '{}': malformed header: expected '{}' at \"{}\"", path_, c,
                  excerpt(text_, position_));
    }

    // A Python string literal in single or double quotes, without escapes.
    std::string read_string(const char* what) {
        skip_spaces();
        char quote = peek();
        NCE_CHECK(quote == '\'' || quote == '"', "read_npy: '{}': malformed header: expected {} in quotes at \"{}\"",
                  path_, what, excerpt(text_, position_));
        std::size_t end = text_.find(quote, position_ + 1);
        NCE_CHECK(end != std::string_view::npos, "read_npy: '{}': malformed header: unterminated string at \"{}\"",
                  path_, excerpt(text_, position_));
        std::string value(text_.substr(position_ + 1, end - position_ - 1));
        position_ = end + 1;
        return value;
    }

    bool read_bool(const char* key) {
        skip_spaces();
        if (text_.substr(position_, 4) == "True") {
            position_ += 4;
            return true;
        }
        if (text_.substr(position_, 5) == "False") {
            position_ += 5;
            return false;
        }
        fail("read_npy: '{}': {} must be True or False, found \"{}\"", path_, key, excerpt(text_, position_));
    }

    // "()", "(3,)", "(2, 3)", "(2, 3,)": a tuple of sizes. "(3)" is not a tuple in Python.
    Shape read_shape() {
        skip_spaces();
        std::size_t start = position_;
        auto bad_shape = [&](const char* why) {
            std::size_t close = text_.find(')', start);  // show the shape up to its ')' where there is one
            std::size_t length = close == std::string_view::npos ? 24 : std::min<std::size_t>(close + 1 - start, 40);
            fail("read_npy: '{}': bad shape \"{}\" in the header: {}; write it as a tuple like (2, 3), (3,) or ()",
                 path_, printable(text_.substr(start, length)), why);
        };
        if (!accept('(')) bad_shape("expected '('");
        Shape shape;
        bool trailing_comma = false;
        while (!accept(')')) {
            skip_spaces();
            if (peek() < '0' || peek() > '9') bad_shape("expected a non-negative integer");
            int64_t size = 0;
            while (peek() >= '0' && peek() <= '9') {
                int64_t digit = peek() - '0';
                if (size > (std::numeric_limits<int64_t>::max() - digit) / 10) bad_shape("a size is too large");
                size = size * 10 + digit;
                ++position_;
            }
            shape.push_back(size);
            // NumPy writes at most 64 axes (NPY_MAXDIMS); more is no array a tool wrote.
            if (shape.size() > 64) bad_shape("more than 64 axes, the most NumPy writes");
            trailing_comma = accept(',');
            if (!trailing_comma) {
                if (!accept(')')) bad_shape("expected ',' or ')'");
                break;
            }
        }
        if (shape.size() == 1 && !trailing_comma) bad_shape("a one-axis shape needs a trailing comma");
        return shape;
    }

    std::string_view text_;
    const std::string& path_;
    std::size_t position_ = 0;
};

// '<f8' -> float64 and so on. '<' is little-endian; '|' (no byte order) and '=' (native,
// which is little-endian here) read the same way.
Dtype dtype_from_descr(const std::string& descr, const std::string& path) {
    NCE_CHECK(descr.empty() || (descr[0] != '>' && descr[0] != '!'),
              "read_npy: '{}': dtype '{}' is big-endian, which is not supported; save it little-endian with "
              "a.astype(a.dtype.newbyteorder('<'))",
              path, printable(descr));
    std::string_view code(descr);
    if (!code.empty() && (code[0] == '<' || code[0] == '|' || code[0] == '=')) code.remove_prefix(1);
    if (code == "f4") return Dtype::Float32;
    if (code == "f8") return Dtype::Float64;
    if (code == "i8") return Dtype::Int64;
    fail("read_npy: '{}': unsupported dtype '{}'; nce reads '<f4' (float32), '<f8' (float64) and '<i8' (int64): convert "
         "with a.astype(...)",
         path, printable(descr));
}

const char* descr_of(Dtype dtype) {
    switch (dtype) {
        case Dtype::Float32: return "<f4";
        case Dtype::Float64: return "<f8";
        case Dtype::Int64: return "<i8";
    }
    return "?";
}

// Little-endian unsigned integer of `bytes` bytes at `data`.
uint64_t read_little_endian(const char* data, int bytes) {
    uint64_t value = 0;
    for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(data[i]);
    return value;
}

std::string little_endian_bytes(uint64_t value, int bytes) {
    std::string out(static_cast<std::size_t>(bytes), '\0');
    for (int i = 0; i < bytes; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
    return out;
}

// Bytes the data of `shape` takes, or nothing if that overflows int64. The non-zero sizes'
// product must fit as well: an empty array's element count and strides still multiply every
// size, and (0, 2**62, 2**62) would overflow them.
std::optional<uint64_t> data_bytes(const Shape& shape, std::size_t element_size) {
    int64_t span = static_cast<int64_t>(element_size);  // element size times the non-zero sizes
    bool empty = false;
    for (int64_t size : shape) {
        if (size == 0)
            empty = true;
        else if (__builtin_mul_overflow(span, size, &span))
            return std::nullopt;
    }
    return empty ? 0 : static_cast<uint64_t>(span);
}

// ---- writing ----

// "()", "(5,)", "(2, 3, 4)": the shape as Python writes a tuple.
std::string python_tuple(const Shape& shape) {
    if (shape.size() == 1) return fmt::format("({},)", shape[0]);
    return fmt::format("({})", fmt::join(shape, ", "));
}

// Magic, version, header length and the header, exactly as NumPy writes them: the dict
// with sorted keys, room for the first size to grow, then spaces and a '\n' so that the
// data starts at a multiple of 64 bytes. Version 1.0 stores the header length in 2 bytes;
// a header longer than 65535 bytes needs version 2.0 and its 4-byte length.
std::string npy_preamble(const Tensor& tensor, const std::string& path) {
    std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr_of(tensor.dtype()),
                                   python_tuple(tensor.shape()));
    if (!tensor.shape().empty()) {
        std::size_t first_size_digits = fmt::format("{}", tensor.shape()[0]).size();
        dict.append(kGrowthAxisDigits - std::min(kGrowthAxisDigits, first_size_digits), ' ');
    }
    for (int version : {1, 2}) {
        int length_bytes = version == 1 ? 2 : 4;
        std::size_t prefix = kMagic.size() + 2 + static_cast<std::size_t>(length_bytes);
        std::size_t unpadded = dict.size() + 1;  // + the final '\n'
        std::size_t padding = kAlignment - (prefix + unpadded) % kAlignment;
        std::size_t header_length = unpadded + padding;
        if (version == 1 && header_length > 0xffff) continue;
        std::string preamble(kMagic);
        preamble += static_cast<char>(version);
        preamble += '\0';
        preamble += little_endian_bytes(header_length, length_bytes);
        preamble += dict;
        preamble.append(padding, ' ');
        preamble += '\n';
        return preamble;
    }
    fail("write_npy: '{}': a header of {} bytes does not fit any .npy version", path, dict.size());
}

}  // namespace

NpyLayout read_npy_layout(const std::string& path) {
    std::error_code error;
    NCE_CHECK(!std::filesystem::is_directory(path, error), "read_npy: '{}' is a directory, not a .npy file", path);
    std::ifstream file(path, std::ios::binary);
    NCE_CHECK(file.is_open(), "read_npy: cannot open '{}': {}", path, std::strerror(errno));
    file.seekg(0, std::ios::end);
    uint64_t file_size = static_cast<uint64_t>(file.tellg());
    file.seekg(0);

    // Magic, version and the header length.
    char prefix[12] = {};
    NCE_CHECK(file_size >= 10 && file.read(prefix, 10),
              "read_npy: '{}' is not a .npy file: {} bytes is shorter than the 10-byte preamble", path, file_size);
    NCE_CHECK(std::string_view(prefix, kMagic.size()) == kMagic,
              "read_npy: '{}' is not a .npy file: it does not start with \"\\x93NUMPY\" (found \"{}\")", path,
              excerpt(std::string_view(prefix, kMagic.size()), 0));
    int major = static_cast<unsigned char>(prefix[6]), minor = static_cast<unsigned char>(prefix[7]);
    NCE_CHECK((major == 1 || major == 2 || major == 3) && minor == 0,
              "read_npy: '{}': unsupported .npy format version {}.{} (supported: 1.0, 2.0, 3.0)", path, major, minor);
    int length_bytes = major == 1 ? 2 : 4;
    NCE_CHECK(major == 1 || (file_size >= 12 && file.read(prefix + 10, 2)),
              "read_npy: '{}' is truncated: {} bytes is shorter than the 12-byte version {}.0 preamble", path,
              file_size, major);
    uint64_t header_length = read_little_endian(prefix + 8, length_bytes);
    uint64_t data_offset = 8 + static_cast<uint64_t>(length_bytes) + header_length;
    NCE_CHECK(data_offset <= file_size,
              "read_npy: '{}' is truncated: its preamble and {}-byte header need {} bytes, the file has {}", path,
              header_length, data_offset, file_size);

    // The header dict.
    std::string header_text(header_length, '\0');
    NCE_CHECK(file.read(header_text.data(), static_cast<std::streamsize>(header_length)),
              "read_npy: '{}': reading the header failed", path);
    Header header = HeaderParser(header_text, path).parse();
    Dtype dtype = dtype_from_descr(header.descr, path);
    NCE_CHECK(!header.fortran_order,
              "read_npy: '{}' is stored in Fortran (column-major) order; nce reads C order: save "
              "np.ascontiguousarray(a) instead",
              path);

    // The data: exactly numel · element size bytes must follow the header.
    std::optional<uint64_t> expected = data_bytes(header.shape, dtype_size(dtype));
    NCE_CHECK(expected.has_value(), "read_npy: '{}': shape {} is too large", path, shape_string(header.shape));
    uint64_t actual = file_size - data_offset;
    NCE_CHECK(actual >= *expected,
              "read_npy: '{}' is truncated: shape {} {} needs {} data bytes, the file has {}", path,
              shape_string(header.shape), dtype_name(dtype), *expected, actual);
    NCE_CHECK(actual == *expected,
              "read_npy: '{}' has {} data bytes where shape {} {} needs {}: extra bytes after the data", path, actual,
              shape_string(header.shape), dtype_name(dtype), *expected);
    return NpyLayout{dtype, header.shape, data_offset};
}

Tensor read_npy(const std::string& path) {
    NpyLayout layout = read_npy_layout(path);
    std::ifstream file(path, std::ios::binary);
    NCE_CHECK(file.is_open(), "read_npy: cannot open '{}': {}", path, std::strerror(errno));
    file.seekg(static_cast<std::streamoff>(layout.data_offset));
    uint64_t expected = static_cast<uint64_t>(shape_numel(layout.shape)) * dtype_size(layout.dtype);
    Tensor tensor = Tensor::empty(layout.shape, layout.dtype);
    NCE_CHECK(file.read(static_cast<char*>(tensor.raw_data()), static_cast<std::streamsize>(expected)),
              "read_npy: '{}': reading {} data bytes failed", path, expected);
    return tensor;
}

void write_npy(const std::string& path, const Tensor& tensor) {
    NCE_CHECK(tensor.defined(), "write_npy: '{}': the tensor is undefined", path);
    Tensor host = tensor.to(Device::CPU);
    std::string preamble = npy_preamble(host, path);

    write_file_atomically(path, "write_npy", [&](std::FILE* file) {
        return std::fwrite(preamble.data(), 1, preamble.size(), file) == preamble.size() &&
               std::fwrite(host.raw_data(), 1, host.nbytes(), file) == host.nbytes();
    });
}

}  // namespace nce
