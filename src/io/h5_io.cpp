// SPDX-License-Identifier: MIT
#include "io/h5_io.hpp"

#include <algorithm>

namespace fsdp::h5 {
namespace {

// Appends the boxes of flat range [a, b) of the sub-array dims[d..] placed at `prefix` (the
// fixed indices of the outer dimensions d' < d, each with count 1).
void boxes_rec(const std::vector<hsize_t>& dims, std::size_t d, std::vector<hsize_t>& prefix,
               std::int64_t a, std::int64_t b, std::vector<Box>& out) {
  if (a >= b) return;
  const std::size_t n = dims.size();
  std::int64_t inner = 1;  // elements per index of dimension d
  for (std::size_t k = d + 1; k < n; ++k) inner *= std::int64_t(dims[k]);
  auto add_rows = [&](std::int64_t r0, std::int64_t r1) {  // whole indices [r0, r1) of dim d
    Box box;
    box.start = prefix;
    box.count.assign(prefix.size(), 1);
    box.start.push_back(hsize_t(r0));
    box.count.push_back(hsize_t(r1 - r0));
    for (std::size_t k = d + 1; k < n; ++k) {
      box.start.push_back(0);
      box.count.push_back(dims[k]);
    }
    out.push_back(std::move(box));
  };
  auto recurse_row = [&](std::int64_t row, std::int64_t lo, std::int64_t hi) {
    prefix.push_back(hsize_t(row));
    boxes_rec(dims, d + 1, prefix, lo, hi, out);
    prefix.pop_back();
  };
  std::int64_t r0 = a / inner, r1 = b / inner;
  const std::int64_t a_in = a % inner, b_in = b % inner;
  if (r0 == r1) {  // inside one index of dim d
    recurse_row(r0, a_in, b_in);
    return;
  }
  if (a_in != 0) recurse_row(r0++, a_in, inner);
  if (r0 < r1) add_rows(r0, r1);
  if (b_in != 0) recurse_row(r1, 0, b_in);
}

hid_t attr_space_scalar() { return FSDP_H5_ID(H5Screate(H5S_SCALAR)); }

void write_attr(hid_t obj, const char* name, hid_t file_type, hid_t mem_type, hid_t space,
                const void* data) {
  Attr a{FSDP_H5_ID(H5Acreate2(obj, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT))};
  FSDP_H5_CHECK(H5Awrite(a.get(), mem_type, data));
}

}  // namespace

FlatRange intersect(FlatRange a, FlatRange b) {
  return {std::max(a.begin, b.begin), std::min(a.end, b.end)};
}

std::vector<Box> flat_range_boxes(const std::vector<hsize_t>& dims, FlatRange r) {
  std::vector<Box> out;
  std::vector<hsize_t> prefix;
  if (dims.empty()) {  // a scalar dataspace: one element or none
    if (!r.empty()) out.push_back(Box{});
    return out;
  }
  boxes_rec(dims, 0, prefix, r.begin, r.end, out);
  return out;
}

void select_flat_range(hid_t space, FlatRange r) {
  const int rank = H5Sget_simple_extent_ndims(space);
  FSDP_H5_CHECK(rank);
  std::vector<hsize_t> dims(std::size_t(rank), 0);
  FSDP_H5_CHECK(H5Sget_simple_extent_dims(space, dims.data(), nullptr));
  const std::vector<Box> boxes = flat_range_boxes(dims, r);
  if (boxes.empty()) {
    FSDP_H5_CHECK(H5Sselect_none(space));
    return;
  }
  if (rank == 0) {
    FSDP_H5_CHECK(H5Sselect_all(space));
    return;
  }
  for (std::size_t i = 0; i < boxes.size(); ++i)
    FSDP_H5_CHECK(H5Sselect_hyperslab(space, i == 0 ? H5S_SELECT_SET : H5S_SELECT_OR,
                                      boxes[i].start.data(), nullptr, boxes[i].count.data(),
                                      nullptr));
}

std::vector<hsize_t> dims_of(hid_t dataset) {
  Space s{FSDP_H5_ID(H5Dget_space(dataset))};
  const int rank = H5Sget_simple_extent_ndims(s.get());
  FSDP_H5_CHECK(rank);
  std::vector<hsize_t> dims(std::size_t(rank), 0);
  FSDP_H5_CHECK(H5Sget_simple_extent_dims(s.get(), dims.data(), nullptr));
  return dims;
}

std::int64_t numel(const std::vector<hsize_t>& dims) {
  std::int64_t n = 1;
  for (hsize_t d : dims) n *= std::int64_t(d);
  return n;
}

std::string shape_text(const std::vector<hsize_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

namespace {

// The file and memory selections of one flat-range transfer.
struct Selections {
  Space file, mem;
};
Selections selections(hid_t dataset, FlatRange r) {
  Selections s;
  s.file = Space{FSDP_H5_ID(H5Dget_space(dataset))};
  select_flat_range(s.file.get(), r);
  const hsize_t n = hsize_t(std::max<std::int64_t>(r.size(), 1));
  s.mem = Space{FSDP_H5_ID(H5Screate_simple(1, &n, nullptr))};
  if (r.empty()) FSDP_H5_CHECK(H5Sselect_none(s.mem.get()));
  return s;
}

}  // namespace

std::vector<FlatRange> block_runs(const std::vector<hsize_t>& dims, const TensorBlock& b) {
  std::vector<FlatRange> runs;
  if (b.numel() == 0) return runs;
  const std::size_t n = dims.size();
  if (n == 0) return {FlatRange{0, 1}};
  // k: the outermost dimension of the run; every dimension inside it is whole.
  std::size_t k = n - 1;
  while (k > 0 && b.start[k] == 0 && b.count[k] == std::int64_t(dims[k])) --k;
  std::vector<std::int64_t> stride(n, 1);
  for (std::size_t d = n - 1; d > 0; --d) stride[d - 1] = stride[d] * std::int64_t(dims[d]);
  const std::int64_t len = b.count[k] * stride[k];
  std::vector<std::int64_t> at(b.start.begin(), b.start.begin() + std::ptrdiff_t(k));
  while (true) {  // every index of dimensions 0..k-1 inside the block, row-major
    std::int64_t begin = b.start[k] * stride[k];
    for (std::size_t d = 0; d < k; ++d) begin += at[d] * stride[d];
    runs.push_back({begin, begin + len});
    std::size_t d = k;
    while (d > 0 && ++at[d - 1] == b.start[d - 1] + b.count[d - 1]) {
      at[d - 1] = b.start[d - 1];
      --d;
    }
    if (d == 0) return runs;
  }
}

void read_block(hid_t dataset, const TensorBlock& b, float* data, hid_t dxpl) {
  Space file{FSDP_H5_ID(H5Dget_space(dataset))};
  const hsize_t n = hsize_t(std::max<std::int64_t>(b.numel(), 1));
  Space mem{FSDP_H5_ID(H5Screate_simple(1, &n, nullptr))};
  float none = 0.f;
  if (b.numel() == 0) {
    FSDP_H5_CHECK(H5Sselect_none(file.get()));
    FSDP_H5_CHECK(H5Sselect_none(mem.get()));
  } else if (!b.start.empty()) {
    const std::vector<hsize_t> start(b.start.begin(), b.start.end()),
        count(b.count.begin(), b.count.end());
    FSDP_H5_CHECK(H5Sselect_hyperslab(file.get(), H5S_SELECT_SET, start.data(), nullptr,
                                      count.data(), nullptr));
  }
  FSDP_H5_CHECK(H5Dread(dataset, H5T_NATIVE_FLOAT, mem.get(), file.get(), dxpl,
                        b.numel() == 0 ? &none : data));
}

void read_flat(hid_t dataset, FlatRange r, float* data, hid_t dxpl) {
  const Selections s = selections(dataset, r);
  float none = 0.f;
  FSDP_H5_CHECK(H5Dread(dataset, H5T_NATIVE_FLOAT, s.mem.get(), s.file.get(), dxpl,
                        r.empty() ? &none : data));
}

void write_attr_i64(hid_t obj, const char* name, std::int64_t v) {
  Space s{attr_space_scalar()};
  write_attr(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, s.get(), &v);
}

void write_attr_u64(hid_t obj, const char* name, std::uint64_t v) {
  Space s{attr_space_scalar()};
  write_attr(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, s.get(), &v);
}

void write_attr_f64(hid_t obj, const char* name, double v) {
  Space s{attr_space_scalar()};
  write_attr(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, s.get(), &v);
}

void write_attr_str(hid_t obj, const char* name, const std::string& v) {
  // Fixed-length: variable-length strings live in the global heap, which has no checksum.
  Type t{FSDP_H5_ID(H5Tcopy(H5T_C_S1))};
  FSDP_H5_CHECK(H5Tset_size(t.get(), std::max<std::size_t>(v.size(), 1)));
  FSDP_H5_CHECK(H5Tset_strpad(t.get(), H5T_STR_NULLPAD));
  Space s{attr_space_scalar()};
  std::string buf = v;
  buf.resize(std::max<std::size_t>(v.size(), 1), '\0');
  write_attr(obj, name, t.get(), t.get(), s.get(), buf.data());
}

void write_attr_u64s(hid_t obj, const char* name, const std::vector<std::uint64_t>& v) {
  const hsize_t n = v.size();
  Space s{FSDP_H5_ID(H5Screate_simple(1, &n, nullptr))};
  static const std::uint64_t none = 0;
  write_attr(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, s.get(), v.empty() ? &none : v.data());
}

bool has_attr(hid_t obj, const char* name) {
  const htri_t e = H5Aexists(obj, name);
  FSDP_H5_CHECK(e);
  return e > 0;
}

namespace {

Attr open_attr(hid_t obj, const char* name) {
  if (!has_attr(obj, name)) throw H5Error(std::string("attribute '") + name + "' is missing");
  return Attr{FSDP_H5_ID(H5Aopen(obj, name, H5P_DEFAULT))};
}

// Reads a numeric scalar attribute converted to mem_type; a wrong class is an error, not a cast.
void read_scalar(hid_t obj, const char* name, H5T_class_t want, hid_t mem_type, void* out) {
  Attr a = open_attr(obj, name);
  Type t{FSDP_H5_ID(H5Aget_type(a.get()))};
  Space s{FSDP_H5_ID(H5Aget_space(a.get()))};
  const hssize_t n = H5Sget_simple_extent_npoints(s.get());
  FSDP_H5_CHECK(n);
  if (H5Tget_class(t.get()) != want || n != 1)
    throw H5Error(std::string("attribute '") + name + "' has the wrong type or size");
  FSDP_H5_CHECK(H5Aread(a.get(), mem_type, out));
}

}  // namespace

std::int64_t read_attr_i64(hid_t obj, const char* name) {
  std::int64_t v = 0;
  read_scalar(obj, name, H5T_INTEGER, H5T_NATIVE_INT64, &v);
  return v;
}

std::uint64_t read_attr_u64(hid_t obj, const char* name) {
  std::uint64_t v = 0;
  read_scalar(obj, name, H5T_INTEGER, H5T_NATIVE_UINT64, &v);
  return v;
}

double read_attr_f64(hid_t obj, const char* name) {
  double v = 0;
  read_scalar(obj, name, H5T_FLOAT, H5T_NATIVE_DOUBLE, &v);
  return v;
}

std::string read_attr_str(hid_t obj, const char* name) {
  Attr a = open_attr(obj, name);
  Type t{FSDP_H5_ID(H5Aget_type(a.get()))};
  if (H5Tget_class(t.get()) != H5T_STRING || H5Tis_variable_str(t.get()) != 0)
    throw H5Error(std::string("attribute '") + name + "' is not a fixed-length string");
  const std::size_t size = H5Tget_size(t.get());
  std::string buf(size, '\0');
  FSDP_H5_CHECK(H5Aread(a.get(), t.get(), buf.data()));
  buf.resize(buf.find('\0') == std::string::npos ? size : buf.find('\0'));
  return buf;
}

std::vector<std::uint64_t> read_attr_u64s(hid_t obj, const char* name) {
  Attr a = open_attr(obj, name);
  Type t{FSDP_H5_ID(H5Aget_type(a.get()))};
  Space s{FSDP_H5_ID(H5Aget_space(a.get()))};
  const hssize_t n = H5Sget_simple_extent_npoints(s.get());
  FSDP_H5_CHECK(n);
  if (H5Tget_class(t.get()) != H5T_INTEGER || H5Tget_size(t.get()) != 8)
    throw H5Error(std::string("attribute '") + name + "' is not a uint64 array");
  std::vector<std::uint64_t> v(std::size_t(n), 0);
  if (n > 0) FSDP_H5_CHECK(H5Aread(a.get(), H5T_NATIVE_UINT64, v.data()));
  return v;
}

}  // namespace fsdp::h5
