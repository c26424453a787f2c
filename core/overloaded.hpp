// Overloaded: the visitor of std::visit built from lambdas, one per alternative of a variant.
#pragma once

namespace syncplan {

/// std::visit(Overloaded{[](const A&) {...}, [](const B&) {...}}, variant) (cppreference's idiom).
template <class... Visitors>
struct Overloaded : Visitors... {
  using Visitors::operator()...;
};
template <class... Visitors>
Overloaded(Visitors...) -> Overloaded<Visitors...>;

}  // namespace syncplan
