import FuzzSupport
import LedgerAppStore

/// libFuzzer entry: V1 server notifications (`POST /v1/apple/notifications`; also reaches V2 bodies).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    Fuzz.decode(Array(UnsafeBufferPointer(start: data, count: size)), as: .notification)
    return 0
}

/// The entry point SwiftPM links `main` to.
@_cdecl("FuzzNotificationV1_main")
public func fuzzNotificationV1Main(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv, fuzzOne)
}
