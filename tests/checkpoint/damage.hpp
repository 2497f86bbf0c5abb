// SPDX-License-Identifier: MIT
// Damaging a checkpoint on purpose, for the tests: flip a byte inside one dataset's raw data,
// or replace a dataset by one of another shape. Serial HDF5 (one process, the sec2 driver).
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "io/h5_handles.hpp"
#include "io/h5_io.hpp"

namespace fsdp::test {

// The file offset of element `index` of a contiguous dataset.
inline std::int64_t element_offset(const std::string& file, const std::string& dataset,
                                   std::int64_t index) {
  h5::silence_errors();
  h5::File f{FSDP_H5_ID(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT))};
  h5::Dataset d{FSDP_H5_ID(H5Dopen2(f.get(), dataset.c_str(), H5P_DEFAULT))};
  const haddr_t at = H5Dget_offset(d.get());
  if (at == HADDR_UNDEF) throw std::runtime_error(dataset + ": no contiguous storage");
  return std::int64_t(at) + index * std::int64_t(sizeof(float));
}

// XORs one byte of element `index` of the dataset (its second byte: a mantissa bit flips).
inline void flip_byte(const std::string& file, const std::string& dataset, std::int64_t index) {
  const std::int64_t at = element_offset(file, dataset, index) + 1;
  const int fd = ::open(file.c_str(), O_RDWR);
  if (fd < 0) throw std::runtime_error(file + ": cannot open");
  unsigned char b = 0;
  const bool ok = ::pread(fd, &b, 1, at) == 1 && (b ^= 0x10, ::pwrite(fd, &b, 1, at) == 1);
  ::close(fd);
  if (!ok) throw std::runtime_error(file + ": cannot flip a byte");
}

// Replaces the dataset by a 1-D one of numel + 1 zeros, keeping its checksum attributes, so
// only the shape is wrong.
inline void reshape_dataset(const std::string& file, const std::string& dataset) {
  h5::silence_errors();
  h5::File f{FSDP_H5_ID(H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT))};
  std::vector<std::uint64_t> blocks;
  std::uint64_t hash = 0;
  std::int64_t n = 0;
  {
    h5::Dataset d{FSDP_H5_ID(H5Dopen2(f.get(), dataset.c_str(), H5P_DEFAULT))};
    n = h5::numel(h5::dims_of(d.get()));
    blocks = h5::read_attr_u64s(d.get(), "xxh3_blocks");
    hash = h5::read_attr_u64(d.get(), "xxh3");
  }
  FSDP_H5_CHECK(H5Ldelete(f.get(), dataset.c_str(), H5P_DEFAULT));
  const hsize_t dims = hsize_t(n + 1);
  h5::Space s{FSDP_H5_ID(H5Screate_simple(1, &dims, nullptr))};
  h5::Dataset d{FSDP_H5_ID(H5Dcreate2(f.get(), dataset.c_str(), H5T_IEEE_F32LE, s.get(),
                                      H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT))};
  const std::vector<float> zeros(dims, 0.f);
  FSDP_H5_CHECK(H5Dwrite(d.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data()));
  h5::write_attr_u64s(d.get(), "xxh3_blocks", blocks);
  h5::write_attr_u64(d.get(), "xxh3", hash);
}

}  // namespace fsdp::test
