// .npy read and write: round trips, files byte-for-byte as NumPy writes them, and malformed
// files, each of which must give one clear error naming the file.
//
// The fixtures are written out by hand (no NumPy needed to run the tests): the header text,
// its padding and its length are the ones NumPy's format.py produces for that array.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/test_helpers.h"

namespace nce::testing {
namespace {

namespace fs = std::filesystem;

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
}

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The raw little-endian bytes of some values (the test machine is little-endian).
template <typename T>
std::string raw_bytes(const std::vector<T>& values) {
    return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

const std::string kMagic = "\x93NUMPY";

// np.save of np.array([[0.5, -1.25, 3.0], [1e300, -0.0, 42.0]]) with NumPy >= 1.23: version
// 1.0, header length 118 (0x76), the dict, 20 spaces of room for the first size to grow,
// 38 spaces of padding, '\n'; the data starts at byte 128.
const std::vector<double> kFloat64Values = {0.5, -1.25, 3.0, 1e300, -0.0, 42.0};
std::string numpy_float64_2x3(const std::string& fortran_order = "False", const std::string& descr = "<f8") {
    std::string header = "{'descr': '" + descr + "', 'fortran_order': " + fortran_order + ", 'shape': (2, 3), }";
    header.resize(117, ' ');  // 59 + 58 spaces for the good header; a changed word keeps the length
    header += "\n";
    return kMagic + std::string("\x01\x00", 2) + std::string("\x76\x00", 2) + header + raw_bytes(kFloat64Values);
}

}  // namespace

TEST_CASE("npy: round trip of each dtype at shapes [], [5], [2,3,4]") {
    TemporaryDirectory directory;
    Generator generator(3);
    for (Dtype dtype : {Dtype::Float32, Dtype::Float64, Dtype::Int64}) {
        for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3, 4}}) {
            Tensor original;
            if (dtype == Dtype::Int64) {
                std::vector<int64_t> values;
                for (int64_t i = 0; i < shape_numel(shape); ++i) values.push_back((i - 3) * 1234567890123LL);
                original = Tensor::from_indices(values, shape);
            } else {
                original = generator.normal(shape, dtype);
            }
            std::string path = directory.file(fmt::format("{}_{}.npy", dtype_name(dtype), shape.size()));
            write_npy(path, original);
            Tensor loaded = read_npy(path);
            CHECK(loaded.dtype() == dtype);
            CHECK(loaded.shape() == shape);
            if (dtype == Dtype::Int64)
                CHECK(loaded.to_indices() == original.to_indices());
            else
                CHECK(loaded.to_vector() == original.to_vector());  // bit for bit
        }
    }
}

TEST_CASE("npy: reads files as NumPy writes them, versions 1.0, 2.0 and 3.0") {
    TemporaryDirectory directory;

    SUBCASE("float64 [2, 3], version 1.0, NumPy >= 1.23 padding") {
        write_bytes(directory.file("a.npy"), numpy_float64_2x3());
        Tensor x = read_npy(directory.file("a.npy"));
        CHECK(x.dtype() == Dtype::Float64);
        CHECK(x.shape() == Shape{2, 3});
        CHECK(x.to_vector() == kFloat64Values);
    }
    SUBCASE("float32 [5], version 1.0, older NumPy: 16-byte alignment, no room to grow") {
        std::vector<float> values = {1.5f, -2.0f, 0.25f, 1e-30f, 7.0f};
        std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }" + std::string(12, ' ') + "\n";
        write_bytes(directory.file("b.npy"), kMagic + std::string("\x01\x00\x46\x00", 4) + header + raw_bytes(values));
        Tensor x = read_npy(directory.file("b.npy"));
        CHECK(x.dtype() == Dtype::Float32);
        CHECK(x.shape() == Shape{5});
        for (size_t i = 0; i < values.size(); ++i) CHECK(x.data<float>()[i] == values[i]);
    }
    SUBCASE("int64 scalar, shape ()") {
        std::string header = "{'descr': '<i8', 'fortran_order': False, 'shape': (), }" + std::string(62, ' ') + "\n";
        write_bytes(directory.file("c.npy"), kMagic + std::string("\x01\x00\x76\x00", 4) + header +
                                                 raw_bytes(std::vector<int64_t>{-9000000000000000000LL}));
        Tensor x = read_npy(directory.file("c.npy"));
        CHECK(x.dtype() == Dtype::Int64);
        CHECK(x.shape() == Shape{});
        CHECK(x.to_indices() == std::vector<int64_t>{-9000000000000000000LL});
    }
    SUBCASE("version 2.0: a 4-byte header length") {
        std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }" + std::string(56, ' ') + "\n";
        write_bytes(directory.file("d.npy"),
                    kMagic + std::string("\x02\x00\x74\x00\x00\x00", 6) + header + raw_bytes(kFloat64Values));
        Tensor x = read_npy(directory.file("d.npy"));
        CHECK(x.shape() == Shape{2, 3});
        CHECK(x.to_vector() == kFloat64Values);
    }
    SUBCASE("version 3.0, and the '|' and '=' byte-order marks") {
        std::vector<int64_t> values = {4, -3, 2, -1};
        for (const char* descr : {"<i8", "|i8", "=i8"}) {
            std::string header =
                fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': (4,), }}", descr) + std::string(58, ' ') + "\n";
            write_bytes(directory.file("e.npy"),
                        kMagic + std::string("\x03\x00\x74\x00\x00\x00", 6) + header + raw_bytes(values));
            Tensor x = read_npy(directory.file("e.npy"));
            CHECK(x.dtype() == Dtype::Int64);
            CHECK(x.to_indices() == values);
        }
    }
    SUBCASE("keys in another order, double quotes, no trailing comma, extra spaces") {
        std::string header = "{ \"shape\" : ( 2 ,3 , ) , 'fortran_order':False,'descr':\"<f8\" }\n";
        write_bytes(directory.file("f.npy"), kMagic + std::string("\x01\x00", 2) +
                                                 std::string(1, static_cast<char>(header.size())) + std::string(1, '\0') +
                                                 header + raw_bytes(kFloat64Values));
        Tensor x = read_npy(directory.file("f.npy"));
        CHECK(x.shape() == Shape{2, 3});
        CHECK(x.to_vector() == kFloat64Values);
    }
}

TEST_CASE("npy: writes the bytes NumPy writes, the data aligned to 64 bytes") {
    TemporaryDirectory directory;
    std::string path = directory.file("x.npy");
    write_npy(path, Tensor::from_vector(kFloat64Values, {2, 3}, Dtype::Float64));
    CHECK(read_bytes(path) == numpy_float64_2x3());

    for (const Shape& shape : {Shape{}, Shape{7}, Shape{12345, 1}, Shape{1, 2, 3, 4, 5}}) {
        write_npy(path, Tensor::zeros(shape, Dtype::Float32));
        std::string bytes = read_bytes(path);
        size_t header_length = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
        CHECK(bytes.substr(0, 8) == kMagic + std::string("\x01\x00", 2));
        CHECK((10 + header_length) % 64 == 0);
        CHECK(bytes[10 + header_length - 1] == '\n');
        CHECK(bytes.size() == 10 + header_length + 4 * static_cast<size_t>(shape_numel(shape)));
    }
}

TEST_CASE("npy: a header over 65535 bytes is written as version 2.0; reading refuses more than 64 axes") {
    TemporaryDirectory directory;
    std::string path = directory.file("many_axes.npy");
    Shape shape(25000, 1);  // "1, " per axis: a 75 kB header
    write_npy(path, Tensor::full(shape, 2.5, Dtype::Float64));
    std::string bytes = read_bytes(path);
    CHECK(bytes[6] == 2);
    uint32_t header_length = 0;
    std::memcpy(&header_length, bytes.data() + 8, 4);
    CHECK(header_length > 65535);
    CHECK((12 + header_length) % 64 == 0);
    // NumPy writes at most 64 axes; a header of 25,000 is refused in one short line.
    CHECK_ERROR_MENTIONS(read_npy(path), "more than 64 axes");
    const std::string most = directory.file("64_axes.npy");
    write_npy(most, Tensor::full(Shape(64, 1), 2.5, Dtype::Float64));
    Tensor loaded = read_npy(most);
    CHECK(loaded.shape() == Shape(64, 1));
    CHECK(loaded.item() == 2.5);
}

TEST_CASE("npy: write replaces a file whole and leaves no temporary behind") {
    TemporaryDirectory directory;
    std::string path = directory.file("x.npy");
    write_npy(path, Tensor::zeros({100}, Dtype::Float64));
    write_npy(path, Tensor::from_indices({7}, {1}));
    CHECK(read_npy(path).to_indices() == std::vector<int64_t>{7});
    int files = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(directory.path)) ++files;
    CHECK(files == 1);

    std::string unwritable = directory.file("no_such_directory/x.npy");
    CHECK_ERROR_MENTIONS(write_npy(unwritable, Tensor::zeros({2}, Dtype::Float32)), unwritable);
    CHECK_ERROR_MENTIONS(write_npy(directory.file("y.npy"), Tensor()), "y.npy");
    CHECK_ERROR_MENTIONS(write_npy(directory.path.string(), Tensor::zeros({2}, Dtype::Float32)),
                         directory.path.string());
    files = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(directory.path)) ++files;
    CHECK(files == 1);
}

TEST_CASE("npy: malformed files give one error naming the file and the fault") {
    TemporaryDirectory directory;
    std::string path = directory.file("bad.npy");
    auto check_rejected = [&](const std::string& bytes, const std::string& fault) {
        write_bytes(path, bytes);
        CHECK_ERROR_MENTIONS(read_npy(path), path);
        CHECK_ERROR_MENTIONS(read_npy(path), fault);
    };
    std::string good = numpy_float64_2x3();

    check_rejected("", "not a .npy file");
    check_rejected("\x93NUM", "not a .npy file");
    check_rejected("PK\x03\x04" + good.substr(4), "not a .npy file");                 // a .npz (zip)
    check_rejected(good.substr(0, 6) + std::string("\x04\x00", 2) + good.substr(8), "version 4.0");
    check_rejected(good.substr(0, 60), "truncated");                                       // inside the header
    check_rejected(good.substr(0, good.size() - 8), "truncated");                          // data cut short
    check_rejected(good.substr(0, good.size() - 8), "needs 48 data bytes, the file has 40");
    check_rejected(good + "x", "extra bytes");
    check_rejected(numpy_float64_2x3("True"), "Fortran");
    check_rejected(numpy_float64_2x3("Maybe"), "fortran_order must be True or False");
    check_rejected(numpy_float64_2x3("False", ">f8"), "big-endian");
    check_rejected(numpy_float64_2x3("False", "<i4"), "unsupported dtype '<i4'");
    check_rejected(numpy_float64_2x3("False", "<c8"), "unsupported dtype '<c8'");
    check_rejected(numpy_float64_2x3("False", ""), "unsupported dtype ''");

    // Headers of the same length as the good one (118 bytes), so only the text is wrong.
    auto with_header = [&](std::string text) {
        text.resize(117, ' ');
        return kMagic + std::string("\x01\x00\x76\x00", 4) + text + "\n" + raw_bytes(kFloat64Values);
    };
    check_rejected(with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (2, -3), }"), "bad shape");
    check_rejected(with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (2 3), }"), "bad shape");
    check_rejected(with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (6), }"), "trailing comma");
    check_rejected(with_header("{'descr': '<f8', 'fortran_order': False, 'shape': [2, 3], }"), "bad shape");
    check_rejected(with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (2, x), }"), "bad shape");
    check_rejected(with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }"),
                   "too large");
    check_rejected(with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"),
                   "too large");
    // Empty, but the other sizes overflow int64: the element count and strides multiply them.
    check_rejected(with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4611686018427387904, 4), }"),
                   "too large");
    check_rejected(with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (3037000500, 3037000500, 0), }"),
                   "too large");
    check_rejected(with_header("{'descr': '<f8', 'fortran_order': False, }"), "lacks 'shape'");
    check_rejected(with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), 'x': 1}"),
                   "unexpected key 'x'");
    check_rejected(with_header("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (2, 3), }"),
                   "structured dtypes");
    check_rejected(with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), } trailing"),
                   "after the header");
    check_rejected(with_header("{'descr: '<f8', 'fortran_order': False, 'shape': (2, 3), }"), "malformed header");
    check_rejected(with_header("'descr': '<f8'"), "malformed header");

    CHECK_ERROR_MENTIONS(read_npy(directory.file("missing.npy")), directory.file("missing.npy"));
    CHECK_ERROR_MENTIONS(read_npy(directory.path.string()), "is a directory");
}

TEST_CASE("npy: garbage never crashes: every truncation and many byte changes of a good file") {
    TemporaryDirectory directory;
    std::string path = directory.file("fuzz.npy");
    std::string good = numpy_float64_2x3();
    auto read_or_error = [&](const std::string& bytes) {
        write_bytes(path, bytes);
        try {
            read_npy(path);
        } catch (const Error& error) {
            // One line that names the file.
            std::string message = error.what();
            CHECK(message.find(path) != std::string::npos);
            CHECK(message.find('\n') == std::string::npos);
        }
    };
    for (size_t length = 0; length < good.size(); ++length) read_or_error(good.substr(0, length));
    for (size_t position = 0; position < 128; ++position) {
        for (char replacement : {'\0', '\n', '\xff', '(', ')', ',', '\'', '9', '{', '}'}) {
            std::string changed = good;
            changed[position] = replacement;
            read_or_error(changed);
        }
    }
}

}  // namespace nce::testing
