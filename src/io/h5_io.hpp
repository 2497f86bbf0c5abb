// SPDX-License-Identifier: MIT
// Moving a contiguous flat range of a row-major float dataset between memory and a file, and
// the attribute types the checkpoint format uses. Offsets are 64-bit (hsize_t) throughout.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/h5_handles.hpp"
#include "model/tensor_block.hpp"

namespace fsdp::h5 {

// Elements [begin, end) of a row-major flattening.
struct FlatRange {
  std::int64_t begin = 0, end = 0;
  std::int64_t size() const { return end > begin ? end - begin : 0; }
  bool empty() const { return size() == 0; }
};
FlatRange intersect(FlatRange a, FlatRange b);

// One rectangular block of an N-D dataspace.
struct Box {
  std::vector<hsize_t> start, count;
};
// The boxes whose union, in row-major order, is exactly the flat range r of an array of shape
// `dims`: a partial leading row, the full rows, a partial trailing row, applied recursively
// (at most 2*rank-1 boxes; three for a matrix).
std::vector<Box> flat_range_boxes(const std::vector<hsize_t>& dims, FlatRange r);
// Selects r on a simple dataspace (none when r is empty).
void select_flat_range(hid_t space, FlatRange r);

// A block of an array of shape `dims` (model/tensor_block.hpp) as the contiguous runs of its
// row-major flattening, in order: one per index of the dimensions outside its innermost whole
// ones (a column block of a matrix: one run per row). How a rank writes its block with plain
// byte writes at the dataset's offset (io/direct_file_writer.hpp).
std::vector<FlatRange> block_runs(const std::vector<hsize_t>& dims, const TensorBlock& b);
// Block b of a float dataset into b.numel() contiguous floats at `data` (row-major within the
// block), as one hyperslab. Collective under a collective transfer list, an empty block included.
void read_block(hid_t dataset, const TensorBlock& b, float* data, hid_t dxpl);

std::vector<hsize_t> dims_of(hid_t dataset);
std::int64_t numel(const std::vector<hsize_t>& dims);
std::string shape_text(const std::vector<hsize_t>& dims);  // "[768, 2304]"

// Elements r of a float dataset into r.size() contiguous floats at `data`. With a collective
// transfer list every rank of the file must call, an empty r included (it selects none on both
// sides, as MPI-IO requires). Checkpoints write their data without HDF5
// (io/direct_file_writer.hpp).
void read_flat(hid_t dataset, FlatRange r, float* data, hid_t dxpl);

// Attributes: scalars, fixed-length strings and uint64 arrays. Writing is collective in a
// parallel file: every rank passes the same value.
void write_attr_i64(hid_t obj, const char* name, std::int64_t v);
void write_attr_u64(hid_t obj, const char* name, std::uint64_t v);
void write_attr_f64(hid_t obj, const char* name, double v);
void write_attr_str(hid_t obj, const char* name, const std::string& v);
void write_attr_u64s(hid_t obj, const char* name, const std::vector<std::uint64_t>& v);
bool has_attr(hid_t obj, const char* name);
std::int64_t read_attr_i64(hid_t obj, const char* name);
std::uint64_t read_attr_u64(hid_t obj, const char* name);
double read_attr_f64(hid_t obj, const char* name);
std::string read_attr_str(hid_t obj, const char* name);
std::vector<std::uint64_t> read_attr_u64s(hid_t obj, const char* name);

}  // namespace fsdp::h5
