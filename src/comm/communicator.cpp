// SPDX-License-Identifier: MIT
// What every backend shares: extent checks, the fence before data leaves the compute, issue
// timestamps, link emulation, and the scalar helpers built on a byte all-gather.
#include "comm/communicator.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

#include "core/check.hpp"

namespace fsdp::comm {

double LinkEmulation::seconds(double bus_bytes) const {
  return latency_us * 1e-6 + (gbps > 0 ? bus_bytes / (gbps * 1e9) : 0.0);
}

double to_seconds(Clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// ---- Handle ---------------------------------------------------------------------------------

Handle::Handle(const char* op, std::size_t bytes, Clock::time_point issued,
               Clock::time_point emulated, std::unique_ptr<detail::Pending> pending)
    : op_(op),
      bytes_(bytes),
      issued_(issued),
      emulated_(emulated),
      pending_(std::move(pending)),
      done_(false) {
  if (!pending_) landed_ = Clock::now();
}

Handle::Handle(Handle&& o) noexcept
    : op_(o.op_),
      bytes_(o.bytes_),
      issued_(o.issued_),
      emulated_(o.emulated_),
      landed_(o.landed_),
      completed_(o.completed_),
      pending_(std::move(o.pending_)),
      done_(o.done_) {
  o.done_ = true;
}

Handle& Handle::operator=(Handle&& o) noexcept {
  if (this == &o) return *this;
  if (pending_) pending_->wait();  // the old transfer still owns its buffers
  op_ = o.op_;
  bytes_ = o.bytes_;
  issued_ = o.issued_;
  emulated_ = o.emulated_;
  landed_ = o.landed_;
  completed_ = o.completed_;
  pending_ = std::move(o.pending_);
  done_ = o.done_;
  o.done_ = true;
  return *this;
}

Handle::~Handle() {
  if (pending_) pending_->wait();
}

void Handle::data_landed(Clock::time_point seen) {
  if (!pending_->landed_at(&landed_)) landed_ = seen;
  pending_.reset();
}

bool Handle::test() {
  if (done_) return true;
  if (pending_) {
    if (!pending_->test()) return false;
    data_landed(Clock::now());
  }
  if (Clock::now() < emulated_) return false;
  completed_ = std::max(landed_, emulated_);
  done_ = true;
  return true;
}

void Handle::wait() {
  if (done_) return;
  if (pending_) {
    Watch watch([&] { return std::string(op_) + " (waiting for the transfer to complete)"; },
                nullptr, 0);
    pending_->wait();
    data_landed(Clock::now());
  }
  // Sleep rather than spin: the point of emulation is to leave the core to the compute.
  if (Clock::now() < emulated_) std::this_thread::sleep_until(emulated_);
  completed_ = std::max(landed_, emulated_);
  done_ = true;
}

// ---- Communicator ---------------------------------------------------------------------------

namespace {

// (n-1)/n of the full buffer crosses the bus in a ring all-gather or reduce-scatter, twice
// that in an all-reduce; a lone rank is charged the whole buffer so emulation still delays.
double bus_bytes(std::size_t total, int n, double factor) {
  return n == 1 ? double(total) : factor * double(n - 1) / double(n) * double(total);
}

std::string extent_error(const std::string& comm, const char* op, const char* rule,
                         std::size_t send, std::size_t recv, int n) {
  return "comm::" + std::string(op) + " on communicator '" + comm + "' (size " + std::to_string(n) +
         "): needs " + rule + ", got send " + std::to_string(send) + " and recv " +
         std::to_string(recv) + " elements";
}

bool overlap(const float* a, std::size_t na, const float* b, std::size_t nb) {
  return na > 0 && nb > 0 && a < b + nb && b < a + na;
}

}  // namespace

Communicator::Communicator(int rank, int size, std::string name, LinkEmulation link)
    : rank_(rank), size_(size), name_(std::move(name)), link_(link) {}

std::uint64_t Communicator::enter(const char* op, const char* dtype, std::uint64_t count) {
  ++seq_;
  if (board_) const_cast<ArrivalBoard*>(board_)->arrive(seq_);
  if (!check_ || size_ == 1) return seq_;
  Watch watch("fingerprint exchange before " + watch_label(op, count), board_, seq_);
  const Fingerprint mine = make_fingerprint(op, name_, dtype, count);
  std::vector<Fingerprint> all(static_cast<std::size_t>(size_));
  all_gather_bytes(&mine, all.data(), sizeof(Fingerprint));
  for (int q = 0; q < size_; ++q)
    if (!same(all[std::size_t(q)], mine))
      fatal("collective mismatch on communicator '" + name_ + "': rank " + std::to_string(rank_) +
            " is in " + describe(mine) + " but rank " + std::to_string(q) + " is in " +
            describe(all[std::size_t(q)]));
  return seq_;
}

std::string Communicator::watch_label(const char* op, std::uint64_t count) const {
  return std::string(op) + " of " + std::to_string(count) + " elements on communicator '" + name_ +
         "' from " + CallSite::current();
}

Handle Communicator::issued(const char* op, std::size_t bytes, double bus, Clock::time_point t0,
                            std::unique_ptr<detail::Pending> pending) const {
  Clock::time_point due = t0;
  if (link_.active())
    due += std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(link_.seconds(bus)));
  return Handle(op, bytes, t0, due, std::move(pending));
}

Handle Communicator::gather(ConstVec send, Vec recv, bool blocking, const char* dtype,
                            std::size_t elem_bytes) {
  const std::size_t per_word = 4 / elem_bytes;  // elements per word
  const std::size_t c = send.extent(0), elems = recv.extent(0) * per_word;
  if (recv.extent(0) != std::size_t(size_) * c)
    fatal(extent_error(name_, "all_gather", "recv == size * send", c * per_word, elems, size_));
  const bool in_place = c > 0 && send.data() == recv.data() + std::size_t(rank_) * c;
  if (!in_place && moves_data() && overlap(send.data(), c, recv.data(), recv.extent(0)))
    fatal("comm::all_gather on '" + name_ + "': send overlaps recv but is not its own block");
  const std::uint64_t seq = enter("all_gather", dtype, elems);
  Watch watch([&] { return watch_label("all_gather", elems); }, board_, seq);
  order_after_compute();
  const auto t0 = Clock::now();
  auto pending = start_all_gather(send, recv, blocking);
  const std::size_t bytes = recv.extent(0) * sizeof(float);
  return issued("all_gather", bytes, bus_bytes(bytes, size_, 1.0), t0, std::move(pending));
}

Handle Communicator::gather_bf16(ConstBf16Vec send, Bf16Vec recv, bool blocking) {
  const std::size_t c = send.extent(0);
  if (c % 2 != 0)
    fatal("comm::all_gather of bf16 on communicator '" + name_ + "': " + std::to_string(c) +
          " elements per rank is odd; bf16 gathers move whole 4-byte words");
  if (recv.extent(0) != std::size_t(size_) * c)
    fatal(extent_error(name_, "all_gather", "recv == size * send", c, recv.extent(0), size_));
  // The bits travel as words: no backend needs to know the element type.
  const ConstVec words(reinterpret_cast<const float*>(send.data()), c / 2);
  const Vec rwords(reinterpret_cast<float*>(recv.data()), recv.extent(0) / 2);
  return gather(words, rwords, blocking, "bf16", 2);
}

template <class Start>
Handle Communicator::scatter_checked(const void* send, std::size_t send_count,
                                     std::size_t elem_bytes, const char* dtype, Vec recv,
                                     const Start& start) {
  const std::size_t c = recv.extent(0);
  if (send_count != std::size_t(size_) * c)
    fatal(extent_error(name_, "reduce_scatter", "send == size * recv", send_count, c, size_));
  const char* s0 = static_cast<const char*>(send);
  const char* r0 = reinterpret_cast<const char*>(recv.data());
  if (c > 0 && moves_data() && s0 < r0 + c * sizeof(float) && r0 < s0 + send_count * elem_bytes)
    fatal("comm::reduce_scatter on '" + name_ + "': send and recv overlap");
  const std::uint64_t seq = enter("reduce_scatter", dtype, send_count);
  Watch watch([&] { return watch_label("reduce_scatter", send_count); }, board_, seq);
  order_after_compute();
  const auto t0 = Clock::now();
  auto pending = start();
  const std::size_t bytes = send_count * elem_bytes;
  return issued("reduce_scatter", bytes, bus_bytes(bytes, size_, 1.0), t0, std::move(pending));
}

Handle Communicator::scatter(ConstVec send, Vec recv, ReduceOp op, bool blocking) {
  return scatter_checked(send.data(), send.extent(0), sizeof(float), "float", recv,
                         [&] { return start_reduce_scatter(send, recv, op, blocking); });
}

Handle Communicator::scatter_bf16(ConstBf16Vec send, Vec recv, ReduceOp op, bool blocking) {
  return scatter_checked(send.data(), send.extent(0), sizeof(std::uint16_t), "bf16", recv,
                         [&] { return start_reduce_scatter_bf16(send, recv, op, blocking); });
}

std::unique_ptr<detail::Pending> Communicator::start_reduce_scatter_bf16(ConstBf16Vec send,
                                                                         Vec recv, ReduceOp op,
                                                                         bool) {
  FlatView wide("comm::reduce_scatter_bf16_widened", send.extent(0));
  widen_bf16(send, Vec(wide.data(), wide.extent(0)));
  order_after_compute();
  return start_reduce_scatter(ConstVec(wide.data(), wide.extent(0)), recv, op, true);
}

Handle Communicator::reduce(Vec buf, ReduceOp op, bool blocking) {
  const std::uint64_t seq = enter("all_reduce", "float", buf.extent(0));
  Watch watch([&] { return watch_label("all_reduce", buf.extent(0)); }, board_, seq);
  order_after_compute();
  const auto t0 = Clock::now();
  auto pending = start_all_reduce(buf, op, blocking);
  const std::size_t bytes = buf.extent(0) * sizeof(float);
  return issued("all_reduce", bytes, bus_bytes(bytes, size_, 2.0), t0, std::move(pending));
}

void Communicator::order_after_compute() { ExecSpace().fence(); }

void Communicator::all_to_all(ConstVec send, Vec recv) {
  const std::size_t n = send.extent(0);
  if (recv.extent(0) != n || n % std::size_t(size_) != 0)
    fatal("comm::all_to_all on '" + name_ + "': send (" + std::to_string(n) + ") and recv (" +
          std::to_string(recv.extent(0)) + ") must be equal multiples of the group size " +
          std::to_string(size_));
  if (n > 0 && moves_data() && overlap(send.data(), n, recv.data(), n))
    fatal("comm::all_to_all on '" + name_ + "': send and recv overlap");
  const std::uint64_t seq = enter("all_to_all", "float", n);
  Watch watch([&] { return watch_label("all_to_all", n); }, board_, seq);
  order_after_compute();
  const auto t0 = Clock::now();
  do_all_to_all(send, recv);
  const std::size_t bytes = n * sizeof(float);
  issued("all_to_all", bytes, bus_bytes(bytes, size_, 1.0), t0, nullptr).wait();
}

void Communicator::do_all_to_all(ConstVec send, Vec recv) {
  const std::size_t c = send.extent(0) / std::size_t(size_);
  FlatView whole("comm::all_to_all_block", send.extent(0));
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) Kokkos::deep_copy(whole, send);
    do_broadcast(Vec(whole.data(), whole.extent(0)), p);
    Kokkos::deep_copy(Vec(recv.data() + std::size_t(p) * c, c),
                      ConstVec(whole.data() + std::size_t(rank_) * c, c));
  }
}

void Communicator::all_gather(ConstVec send, Vec recv) { gather(send, recv, true).wait(); }
void Communicator::reduce_scatter(ConstVec send, Vec recv, ReduceOp op) {
  scatter(send, recv, op, true).wait();
}
void Communicator::all_reduce(Vec buf, ReduceOp op) { reduce(buf, op, true).wait(); }

Handle Communicator::iall_gather(ConstVec send, Vec recv) { return gather(send, recv, false); }
Handle Communicator::ireduce_scatter(ConstVec send, Vec recv, ReduceOp op) {
  return scatter(send, recv, op, false);
}
Handle Communicator::iall_reduce(Vec buf, ReduceOp op) { return reduce(buf, op, false); }

void Communicator::all_gather(ConstBf16Vec send, Bf16Vec recv) {
  gather_bf16(send, recv, true).wait();
}
Handle Communicator::iall_gather(ConstBf16Vec send, Bf16Vec recv) {
  return gather_bf16(send, recv, false);
}
void Communicator::reduce_scatter(ConstBf16Vec send, Vec recv, ReduceOp op) {
  scatter_bf16(send, recv, op, true).wait();
}
Handle Communicator::ireduce_scatter(ConstBf16Vec send, Vec recv, ReduceOp op) {
  return scatter_bf16(send, recv, op, false);
}

void Communicator::broadcast(Vec buf, int root) {
  if (root < 0 || root >= size_)
    fatal("comm::broadcast on '" + name_ + "': root " + std::to_string(root) +
          " is not a rank of a communicator of size " + std::to_string(size_));
  const std::uint64_t seq = enter("broadcast", "float", buf.extent(0));
  Watch watch([&] { return watch_label("broadcast", buf.extent(0)); }, board_, seq);
  order_after_compute();
  const auto t0 = Clock::now();
  do_broadcast(buf, root);
  const std::size_t bytes = buf.extent(0) * sizeof(float);
  issued("broadcast", bytes, double(bytes), t0, nullptr).wait();
}

template <class T>
std::vector<T> Communicator::gather_scalars(const T* v, int n) {
  if (n < 0) fatal("comm::all_reduce on '" + name_ + "': negative count");
  std::vector<T> all(std::size_t(size_) * std::size_t(n));
  const std::uint64_t seq = enter("scalar_all_reduce", sizeof(T) == 8 ? "f64/i64" : "i32", n);
  Watch watch([&] { return watch_label("scalar_all_reduce", n); }, board_, seq);
  const auto t0 = Clock::now();
  all_gather_bytes(v, all.data(), std::size_t(n) * sizeof(T));
  const std::size_t bytes = std::size_t(n) * sizeof(T);
  issued("all_reduce", bytes, bus_bytes(bytes, size_, 2.0), t0, nullptr).wait();
  return all;
}

void Communicator::all_reduce_sum(double* v, int n) {
  const std::vector<double> all = gather_scalars(v, n);
  for (int i = 0; i < n; ++i) {
    double acc = all[std::size_t(i)];
    for (int q = 1; q < size_; ++q) acc += all[std::size_t(q) * n + i];
    v[i] = acc;
  }
}

double Communicator::all_reduce_sum(double v) {
  all_reduce_sum(&v, 1);
  return v;
}

double Communicator::all_reduce_max(double v) {
  // A NaN anywhere wins, so a diverged rank is seen by all of them.
  double m = v;
  for (double x : gather_scalars(&v, 1))
    if (std::isnan(x) || x > m) m = x;
  return m;
}

int Communicator::all_reduce_max(int v) {
  const std::vector<int> all = gather_scalars(&v, 1);
  return *std::max_element(all.begin(), all.end());
}

}  // namespace fsdp::comm
