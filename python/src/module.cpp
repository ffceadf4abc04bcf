// SPDX-License-Identifier: Apache-2.0
// The `hybridcache._hybridcache` extension module: one translation unit that includes the
// bindings of every component (python/src/bind_*.hpp).

#include <hybridcache/error.hpp>
#include <hybridcache/version.hpp>

#include <exception>

#include "bind_dispatch.hpp"
#include "bind_placement.hpp"
#include "bind_rope.hpp"
#include "bind_segment.hpp"
#include "bind_select.hpp"
#include "bind_state.hpp"
#include "bind_store.hpp"
#include "bind_testing.hpp"
#include "bind_tree.hpp"
#include "common.hpp"

namespace {

namespace nb = nanobind;
namespace hc = hybridcache;

PyObject* error_type = nullptr;
PyObject* invalid_argument_type = nullptr;
PyObject* stale_handle_type = nullptr;
PyObject* capacity_error_type = nullptr;
PyObject* not_found_error_type = nullptr;

/// hybridcache::error and its subtypes become Python exceptions of the same shape:
/// Error(RuntimeError); InvalidArgument(Error, ValueError); StaleHandleError(InvalidArgument);
/// CapacityError(Error); NotFoundError(Error, LookupError). The message (naming the argument
/// and value) is kept.
void register_errors(nb::module_& m) {
  error_type = PyErr_NewExceptionWithDoc("hybridcache.Error", "Base of every hybridcache error.",
                                         PyExc_RuntimeError, nullptr);
  nb::object bases_invalid = nb::make_tuple(nb::handle(error_type), nb::handle(PyExc_ValueError));
  invalid_argument_type = PyErr_NewExceptionWithDoc(
      "hybridcache.InvalidArgument", "An argument was out of its domain (the message names it).",
      bases_invalid.ptr(), nullptr);
  stale_handle_type = PyErr_NewExceptionWithDoc(
      "hybridcache.StaleHandleError",
      "A handle (a tree node id) names an erased object; its slot may hold another one now.",
      invalid_argument_type, nullptr);
  capacity_error_type = PyErr_NewExceptionWithDoc(
      "hybridcache.CapacityError", "A pool or budget was exhausted.", error_type, nullptr);
  nb::object bases_not_found =
      nb::make_tuple(nb::handle(error_type), nb::handle(PyExc_LookupError));
  not_found_error_type = PyErr_NewExceptionWithDoc("hybridcache.NotFoundError",
                                                   "A key, namespace or entry does not exist.",
                                                   bases_not_found.ptr(), nullptr);
  m.attr("Error") = nb::handle(error_type);
  m.attr("InvalidArgument") = nb::handle(invalid_argument_type);
  m.attr("StaleHandleError") = nb::handle(stale_handle_type);
  m.attr("CapacityError") = nb::handle(capacity_error_type);
  m.attr("NotFoundError") = nb::handle(not_found_error_type);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const hc::stale_handle_error& e) {
      PyErr_SetString(stale_handle_type, e.what());
    } catch (const hc::invalid_argument& e) {
      PyErr_SetString(invalid_argument_type, e.what());
    } catch (const hc::capacity_error& e) {
      PyErr_SetString(capacity_error_type, e.what());
    } catch (const hc::not_found_error& e) {
      PyErr_SetString(not_found_error_type, e.what());
    } catch (const hc::error& e) {
      PyErr_SetString(error_type, e.what());
    }
  });
}

}  // namespace

NB_MODULE(_hybridcache, m) {
  using namespace hybridcache_python;
  m.doc() =
      "hybridcache: cache policies and state algebra for hybrid LLM serving (C++ core, "
      "nanobind bindings). Arrays are NumPy; long calls release the GIL.";
  m.attr("__version__") = hc::version_string;
  m.attr("version") = nb::make_tuple(HYBRIDCACHE_VERSION_MAJOR, HYBRIDCACHE_VERSION_MINOR,
                                     HYBRIDCACHE_VERSION_PATCH);

  register_errors(m);
  bind_placement(m);
  bind_dispatch(m);
  bind_state(m);
  bind_segment(m);
  bind_tree(m);
  bind_testing(m);
  bind_rope(m);
  bind_select(m);
  bind_store(m);
}
