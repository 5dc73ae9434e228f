// rustfs._rustfs: the native client for Python (pybind11), a thin layer over
// the C API (include/rustfs/rustfs.h): the client runs in the Python
// process, no kernel crossing, and a read batch is one BatchRead per DSS.
// Errors are raised as OSError(errno, message). Calls release the GIL, so
// threads (and DataLoader workers each with their own Client) read at once.
#include <fcntl.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "rustfs/ioctl.h"
#include "rustfs/rustfs.h"

namespace py = pybind11;

namespace {

[[noreturn]] void Raise(int64_t rc) {
  PyErr_SetObject(PyExc_OSError, py::make_tuple(int(-rc), std::string(rustfs_last_error())).ptr());
  throw py::error_already_set();
}
int64_t Check(int64_t rc) {
  if (rc < 0) Raise(rc);
  return rc;
}

// Plan entries from a sequence of (offset, length) pairs or an N x 2 uint64
// array.
std::vector<rustfs_plan_entry> EntriesOf(const py::object& entries) {
  std::vector<rustfs_plan_entry> out;
  if (py::isinstance<py::array>(entries)) {
    auto a = py::array_t<uint64_t, py::array::c_style | py::array::forcecast>::ensure(entries);
    if (!a || a.ndim() != 2 || a.shape(1) != 2) throw py::value_error("entries: an N x 2 array of (offset, length)");
    out.resize(size_t(a.shape(0)));
    std::memcpy(out.data(), a.data(), out.size() * sizeof(rustfs_plan_entry));
    return out;
  }
  for (auto item : entries) {
    auto pair = item.cast<std::pair<uint64_t, uint64_t>>();
    out.push_back({pair.first, pair.second});
  }
  return out;
}

class File;

class Client {
 public:
  explicit Client(const std::string& config) {
    rustfs_client* c = nullptr;
    int rc;
    {
      py::gil_scoped_release nogil;
      rc = rustfs_connect(config.c_str(), &c);
    }
    Check(rc);
    c_.reset(c);
  }
  rustfs_client* get() const { return c_.get(); }
  std::string stats() const {
    int n = rustfs_stats_json(c_.get(), nullptr, 0);
    std::string s(size_t(Check(n)) + 1, '\0');
    rustfs_stats_json(c_.get(), s.data(), s.size());
    s.resize(size_t(n));
    return s;
  }

 private:
  struct Disconnect {
    void operator()(rustfs_client* c) const { rustfs_disconnect(c); }
  };
  std::unique_ptr<rustfs_client, Disconnect> c_;
};

class File {
 public:
  File(std::shared_ptr<Client> client, const std::string& path, const std::string& mode)
      : client_(std::move(client)) {
    int flags = O_RDONLY;
    if (mode == "r") flags = O_RDONLY;
    else if (mode == "r+") flags = O_RDWR;
    else if (mode == "w") flags = O_WRONLY | O_CREAT | O_TRUNC;
    else if (mode == "w+") flags = O_RDWR | O_CREAT | O_TRUNC;
    else throw py::value_error("mode: 'r', 'r+', 'w' or 'w+'");
    rustfs_file* f = nullptr;
    int rc;
    {
      py::gil_scoped_release nogil;
      rc = rustfs_open(client_->get(), path.c_str(), flags, 0644, &f);
    }
    Check(rc);
    f_ = f;
  }
  ~File() { close(); }
  void close() {
    if (!f_) return;
    rustfs_file* f = f_;
    f_ = nullptr;
    py::gil_scoped_release nogil;
    rustfs_close(f);
  }
  rustfs_file* get() const {
    if (!f_) throw py::value_error("I/O on a closed rustfs file");
    return f_;
  }
  py::bytes pread(uint64_t offset, size_t length) {
    std::string buf(length, '\0');
    ssize_t n;
    {
      py::gil_scoped_release nogil;
      n = rustfs_pread(get(), buf.data(), length, offset);
    }
    buf.resize(size_t(Check(n)));
    return py::bytes(buf);
  }
  // Reads into a writable buffer (bytearray, numpy array, memoryview).
  size_t readinto(py::buffer b, uint64_t offset) {
    py::buffer_info info = b.request(true);
    size_t len = size_t(info.size) * size_t(info.itemsize);
    ssize_t n;
    {
      py::gil_scoped_release nogil;
      n = rustfs_pread(get(), info.ptr, len, offset);
    }
    return size_t(Check(n));
  }
  // Many reads at once: one BatchRead per DSS for all the misses.
  std::vector<py::bytes> read_batch(const py::object& ranges) {
    std::vector<rustfs_plan_entry> rs = EntriesOf(ranges);
    std::vector<std::string> bufs(rs.size());
    std::vector<rustfs_read_req> reqs(rs.size());
    for (size_t i = 0; i < rs.size(); i++) {
      bufs[i].resize(rs[i].length);
      reqs[i] = {rs[i].offset, rs[i].length, bufs[i].data(), 0};
    }
    int rc;
    {
      py::gil_scoped_release nogil;
      rc = rustfs_read_batch(get(), reqs.data(), reqs.size());
    }
    Check(rc);
    std::vector<py::bytes> out;
    for (size_t i = 0; i < rs.size(); i++) {
      bufs[i].resize(size_t(reqs[i].result));
      out.emplace_back(bufs[i]);
    }
    return out;
  }
  size_t pwrite(py::bytes data, uint64_t offset) {
    std::string s = data;
    ssize_t n;
    {
      py::gil_scoped_release nogil;
      n = rustfs_pwrite(get(), s.data(), s.size(), offset);
    }
    return size_t(Check(n));
  }
  void fsync() {
    int rc;
    {
      py::gil_scoped_release nogil;
      rc = rustfs_fsync(get());
    }
    Check(rc);
  }
  int64_t size() { return Check(rustfs_size(get())); }
  void fadvise(uint64_t offset, uint64_t length, int advice) {
    Check(rustfs_fadvise(get(), offset, length, advice));
  }
  void submit_access_plan(const py::object& entries, uint32_t depth) {
    std::vector<rustfs_plan_entry> e = EntriesOf(entries);
    int rc;
    {
      py::gil_scoped_release nogil;
      rc = rustfs_submit_access_plan(get(), e.data(), e.size(), depth);
    }
    Check(rc);
  }

 private:
  std::shared_ptr<Client> client_;  // the connection outlives its files
  rustfs_file* f_ = nullptr;
};

}  // namespace

PYBIND11_MODULE(_rustfs, m) {
  m.doc() = "rustfs native client (over librustfs)";
  py::class_<Client, std::shared_ptr<Client>>(m, "Client")
      .def(py::init<const std::string&>(), py::arg("config") = "",
           "Connects to the cluster of a config file (a cluster's DIR/rustfs.toml).")
      .def("open", [](std::shared_ptr<Client> c, const std::string& path, const std::string& mode) {
             return std::make_unique<File>(std::move(c), path, mode);
           }, py::arg("path"), py::arg("mode") = "r", "Opens a file by its path in the cluster.")
      .def("stats", &Client::stats, "This process's client counters, as JSON text.");
  py::class_<File>(m, "File")
      .def("pread", &File::pread, py::arg("offset"), py::arg("length"))
      .def("readinto", &File::readinto, py::arg("buffer"), py::arg("offset"))
      .def("read_batch", &File::read_batch, py::arg("ranges"),
           "Reads (offset, length) pairs (or an N x 2 uint64 array) together; a list of bytes.")
      .def("pwrite", &File::pwrite, py::arg("data"), py::arg("offset"))
      .def("fsync", &File::fsync)
      .def("size", &File::size)
      .def("fadvise", &File::fadvise, py::arg("offset"), py::arg("length"), py::arg("advice"))
      .def("submit_access_plan", &File::submit_access_plan, py::arg("entries"), py::arg("depth") = 0,
           "Hands over the order of the reads to come ((offset, length) pairs or an N x 2 uint64 array).")
      .def("close", &File::close)
      .def("__enter__", [](File& f) -> File& { return f; })
      .def("__exit__", [](File& f, py::args) { f.close(); });
  m.attr("PLAN_IOCTL_ENTRIES") = RUSTFS_PLAN_IOCTL_ENTRIES;
}
