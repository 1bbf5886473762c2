// A tensor's shape at run time: a small vector that keeps the common ranks
// inline, so creating a tensor on the executor's hot path does not touch the
// heap for its shape.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace weft {

class Dims {
 public:
  static constexpr int kInline = 6;

  Dims() = default;
  Dims(const int64_t* dims, int32_t rank) { assign(dims, rank); }
  Dims(const Dims& other) { assign(other.data(), other.rank_); }
  Dims& operator=(const Dims& other) {
    if (this != &other) assign(other.data(), other.rank_);
    return *this;
  }

  void assign(const int64_t* dims, int32_t rank) {
    rank_ = rank;
    if (rank <= kInline) {
      heap_.clear();
      if (rank > 0) std::memcpy(inline_, dims, sizeof(int64_t) * rank);
    } else {
      heap_.assign(dims, dims + rank);
    }
  }

  int32_t rank() const { return rank_; }
  const int64_t* data() const {
    return rank_ <= kInline ? inline_ : heap_.data();
  }
  int64_t operator[](int i) const { return data()[i]; }
  int64_t elements() const {
    int64_t n = 1;
    for (int i = 0; i < rank_; ++i) n *= data()[i];
    return n;
  }
  bool operator==(const Dims& o) const {
    return rank_ == o.rank_ &&
           std::memcmp(data(), o.data(), sizeof(int64_t) * rank_) == 0;
  }
  std::string ToString() const;

 private:
  int32_t rank_ = 0;
  // Entries past rank_ are never read: left uninitialized, so that making
  // a value (the executor makes several per node) writes no 48 bytes.
  int64_t inline_[kInline];
  std::vector<int64_t> heap_;
};

// "[2,3,?]" for shapes with unknown (-1) dims, "<unknown>" for rank -1.
std::string ShapeString(const int64_t* dims, int32_t rank);

}  // namespace weft
