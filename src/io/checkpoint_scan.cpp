// SPDX-License-Identifier: MIT
#include "io/checkpoint_scan.hpp"

#include <algorithm>

#include "core/check.hpp"
#include "comm/agree.hpp"
#include "io/block_hash.hpp"
#include "model/architecture.hpp"

namespace fsdp::ckpt {

Comm::Comm(MPI_Comm c) : comm(c) {
  FSDP_MPI_CHECK(MPI_Comm_rank(c, &rank));
  FSDP_MPI_CHECK(MPI_Comm_size(c, &size));
}

std::vector<Expected> expected_datasets(const ModelConfig& m, OptimizerKind optimizer,
                                       const LoraChoices& lora) {
  std::vector<Expected> out;
  ModelChoices c;
  c.lora = lora;
  for (Part p : kParts)
    for (const UnitLayout& u : model_units(m, c))
      for (const TensorSpec& t : u.tensors)
        if (stores(p, t, optimizer))
          out.push_back({std::string(group_path(p)) + "/" + t.name,
                       std::vector<hsize_t>(t.shape.begin(), t.shape.end())});
  return out;
}

Opened open_checkpoint(const Comm& c, const std::string& path) {
  h5::silence_errors();
  Opened o;
  std::string err;
  try {
    if (const std::string why = not_hdf5(path); !why.empty()) throw h5::H5Error(why);
    const h5::Plist fapl = file_access(c.comm);
    o.file = h5::File{FSDP_H5_ID(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()))};
    try {
      o.header = read_header(o.file.get());
    } catch (const std::exception& e) {
      throw h5::H5Error(std::string("root attributes: ") + e.what());
    }
  } catch (const std::exception& e) {
    err = path + ": " + e.what();
  }
  o.error = agree_on_error(c.comm, err);
  if (!o.error.empty()) o.file.reset();
  return o;
}

void for_my_pieces(const Comm& c, std::int64_t n, std::int64_t B,
                   const std::function<void(h5::FlatRange)>& fn) {
  const std::int64_t piece = kBlocksPerRead * B;
  for (std::int64_t at = std::int64_t(c.rank) * piece; at < n; at += std::int64_t(c.size) * piece)
    fn({at, std::min(at + piece, n)});
}

std::string check_shape(hid_t file, const Expected& e) {
  if (H5Lexists(file, e.path.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return "missing";
  }
  h5::Dataset d{FSDP_H5_ID(H5Dopen2(file, e.path.c_str(), H5P_DEFAULT))};
  const std::vector<hsize_t> dims = h5::dims_of(d.get());
  if (dims != e.dims)
    return "shape " + h5::shape_text(dims) + ", but the stored model config needs " +
           h5::shape_text(e.dims);
  h5::Type t{FSDP_H5_ID(H5Dget_type(d.get()))};
  if (H5Tget_class(t.get()) != H5T_FLOAT || H5Tget_size(t.get()) != 4) return "not float32";
  return {};
}

std::vector<std::uint64_t> stored_checksums(hid_t dataset, std::int64_t n, std::int64_t B) {
  std::vector<std::uint64_t> t = h5::read_attr_u64s(dataset, "xxh3_blocks");
  if (std::int64_t(t.size()) != (n + B - 1) / B)
    throw h5::H5Error("xxh3_blocks has " + std::to_string(t.size()) + " entries, not one per block");
  if (table_hash(t) != h5::read_attr_u64(dataset, "xxh3"))
    throw h5::H5Error("xxh3 does not match xxh3_blocks: the checksums are damaged");
  return t;
}

}  // namespace fsdp::ckpt
