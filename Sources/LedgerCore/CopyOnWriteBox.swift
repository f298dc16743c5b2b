/// A value in a heap box, for large structs that are copied far more often than changed (facts, periods): copies
/// share one box (a copy is one retain, where copying the value retained each of its references) and the owner
/// copies the box before writing when another shares it (`isKnownUniquelyReferenced`).
final class CopyOnWriteBox<Value: Sendable>: @unchecked Sendable {
    // Unchecked: the owners write `value` only after `isKnownUniquelyReferenced`, so no two accesses overlap; the
    // dynamic exclusivity check cost more than the rest of a field read.
    @exclusivity(unchecked) var value: Value

    init(_ value: Value) { self.value = value }
}
