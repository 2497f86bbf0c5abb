// SPDX-License-Identifier: MIT
// tests/nvcc_rules.py's self-test: each `expect:` line is one nvcc refuses (nvcc 13.0,
// --extended-lambda) and g++ accepts; every other lambda here is accepted by both and must not
// be reported. Compiles without Kokkos (the macros below), so nvcc can confirm it:
//   nvcc --extended-lambda -std=c++17 -x cu -c tests/nvcc_rules/bad_lambdas.cpp -o /dev/null
#ifndef KOKKOS_LAMBDA
#define KOKKOS_LAMBDA [=] __host__ __device__
#define KOKKOS_CLASS_LAMBDA [ =, *this ] __host__ __device__
#endif
#ifndef __CUDACC__
#define __host__
#define __device__
#endif

template <class F>
void run(F f) {
  f(0);
}

class Layer {
 public:
  void forward();
  void inline_public() {
    int k = 1;
    run(KOKKOS_LAMBDA(int i) { (void)(i + k); });
  }
  int k_ = 1;

 private:
  void backward();
  void inline_private() {
    int k = 1;
    run(KOKKOS_LAMBDA(int i) { (void)(i + k); });  // expect: private-member
  }

 protected:
  void update() const;
  class Part {
   public:
    void step();
  };

 public:
  struct Open {
    void step();
  };
  Layer();
  ~Layer();
};

void Layer::forward() {
  int k = 1;
  run(KOKKOS_LAMBDA(int i) { (void)(i + k); });
  for (int j = 0; j < 2; ++j) {
    if (j > 0) {
      run(KOKKOS_LAMBDA(int i) { (void)(i + k + j); });
    }
  }
}

void Layer::backward() {
  int k = 1;
  run(KOKKOS_LAMBDA(int i) { (void)(i + k); });  // expect: private-member
}

void Layer::update() const {
  run(KOKKOS_CLASS_LAMBDA(int i) { (void)(i + k_); });  // expect: private-member
}

void Layer::Part::step() {
  int k = 1;
  run(KOKKOS_LAMBDA(int i) { (void)(i + k); });  // expect: private-class
}

void Layer::Open::step() {
  int k = 1;
  run(KOKKOS_LAMBDA(int i) { (void)(i + k); });
}

Layer::Layer() {
  int k = 1;
  run(KOKKOS_LAMBDA(int i) { (void)(i + k); });  // expect: ctor-dtor
}

Layer::~Layer() {
  int k = 1;
  run(KOKKOS_LAMBDA(int i) { (void)(i + k); });  // expect: ctor-dtor
}

auto deduced() {
  int k = 1;
  run(KOKKOS_LAMBDA(int i) { (void)(i + k); });  // expect: deduced-return
  return 1;
}

auto trailing() -> int {
  int k = 1;
  run(KOKKOS_LAMBDA(int i) { (void)(i + k); });
  return 1;
}

void in_lambdas() {
  int k = 1;
  auto plain = [&](int x) { run(KOKKOS_LAMBDA(int i) { (void)(i + k + x); }); };
  plain(1);
  auto generic = [&](auto x) {
    run(KOKKOS_LAMBDA(int i) { (void)(i + k + x); });  // expect: in-generic-lambda
  };
  generic(1);
  run(KOKKOS_LAMBDA(auto i) { (void)(i + k); });  // expect: generic-lambda
  run(KOKKOS_LAMBDA(int j) {
    run(KOKKOS_LAMBDA(int i) { (void)(i + k + j); });  // expect: nested-extended
  });
  run([=](auto i) { (void)(i + k); });
}

void local_class() {
  struct Local {
    void m() {
      int k = 1;
      run(KOKKOS_LAMBDA(int i) { (void)(i + k); });  // expect: local-class
    }
  };
  Local().m();
}

int use() {
  Layer l;
  l.forward();
  l.inline_public();
  in_lambdas();
  local_class();
  return deduced() + trailing();
}
