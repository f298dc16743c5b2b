/// A value in a heap box that copies share, written in place by its only owner: the storage of values copied far more
/// often than changed (`TransactionFact`). Copying the owner is one retain; the owner copies the box before writing
/// when another shares it (`isKnownUniquelyReferenced`).
@usableFromInline
final class CopyOnWriteBox<Value: Sendable>: @unchecked Sendable {
    // Unchecked: an owner writes `value` only while `isKnownUniquelyReferenced` holds, so no two accesses can overlap,
    // and a checked access is a call into the runtime on every read of a field. Sendable for the same reason: a box
    // that is shared is never written.
    @exclusivity(unchecked) @usableFromInline var value: Value

    @usableFromInline
    init(_ value: Value) { self.value = value }
}
