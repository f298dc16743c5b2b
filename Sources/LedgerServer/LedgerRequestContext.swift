#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Hummingbird
import NIOCore

// MARK: - LedgerRequestContext

/// The per-request context of the ledger's router: Hummingbird's core storage plus the connection's channel, from
/// which the peer's credentials are read (SO_PEERCRED) when writers are restricted.
public struct LedgerRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The connection the request arrived on.
    public let channel: (any Channel)?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// The peer process's credentials, or nil when the transport has none (e.g. an in-memory test channel).
    public func peerCredentials() async -> PeerCredentials? {
        await PeerCredentials.of(channel)
    }
}

// MARK: - PeerCredentials

/// Linux's `struct ucred` (hidden by Glibc's module without _GNU_SOURCE): what getsockopt(SO_PEERCRED) fills in.
struct KernelPeerCredentials: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}

/// Who is on the other end of a Unix-socket connection, as the kernel reports it (SO_PEERCRED).
public struct PeerCredentials: Sendable, Hashable, CustomStringConvertible {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    public var description: String { "pid \(pid) uid \(uid) gid \(gid)" }

    /// Starts reading the credentials of `channel`'s peer now (on its event loop that is at once, so it still works
    /// when the channel closes next); nil when the channel is not a socket or the call fails.
    static func reading(_ channel: any Channel) -> EventLoopFuture<PeerCredentials?> {
        #if os(Linux)
        guard let provider = channel as? any SocketOptionProvider else { return channel.eventLoop.makeSucceededFuture(nil) }
        let read: EventLoopFuture<KernelPeerCredentials> = provider.unsafeGetSocketOption(
            level: NIOBSDSocket.OptionLevel(rawValue: SOL_SOCKET), name: NIOBSDSocket.Option(rawValue: SO_PEERCRED))
        return read.map { Optional(PeerCredentials(pid: $0.pid, uid: $0.uid, gid: $0.gid)) }.recover { _ in nil }
        #else
        return channel.eventLoop.makeSucceededFuture(nil)
        #endif
    }

    /// Reads the credentials of `channel`'s peer; nil when the channel is not a socket or the call fails.
    static func of(_ channel: (any Channel)?) async -> PeerCredentials? {
        #if os(Linux)
        guard let provider = channel as? any SocketOptionProvider else { return nil }
        do {
            let cred: KernelPeerCredentials = try await provider.unsafeGetSocketOption(
                level: NIOBSDSocket.OptionLevel(rawValue: SOL_SOCKET), name: NIOBSDSocket.Option(rawValue: SO_PEERCRED)
            ).get()
            return PeerCredentials(pid: cred.pid, uid: cred.uid, gid: cred.gid)
        } catch {
            return nil
        }
        #else
        return nil
        #endif
    }
}
