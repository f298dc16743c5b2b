#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A pthread mutex, for the environment's single writer.
final class Mutex: @unchecked Sendable {
    private let m = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    init() { pthread_mutex_init(m, nil) }
    deinit {
        pthread_mutex_destroy(m)
        m.deallocate()
    }
    func lock() { pthread_mutex_lock(m) }
    func unlock() { pthread_mutex_unlock(m) }
}

/// A pthread reader-writer lock: transactions hold it shared, map resizing exclusively.
final class ReadWriteLock: @unchecked Sendable {
    private let l = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
    init() { pthread_rwlock_init(l, nil) }
    deinit {
        pthread_rwlock_destroy(l)
        l.deallocate()
    }
    func lockShared() { pthread_rwlock_rdlock(l) }
    func lockExclusive() { pthread_rwlock_wrlock(l) }
    func unlock() { pthread_rwlock_unlock(l) }
}
