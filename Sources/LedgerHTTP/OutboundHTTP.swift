import AsyncHTTPClient
import Foundation
import LedgerErrors
import NIOCore
import NIOPosix
import NIOSSL

// MARK: - OutboundHTTP

/// How the ledger reaches an HTTP service its configuration names (Apple's App Store Server API, the webhook's
/// receiver): with AsyncHTTPClient, `http://` or `https://`, trusting the system's roots or only the certificates the
/// configuration names, and never following a redirect, so a request (and the token or signature it carries) goes
/// nowhere but the configured host.
public enum OutboundHTTP {
    /// A client for one configured service. `trustedCertificates` are file paths (PEM, one certificate or more, or
    /// DER); when any are given they are the only roots trusted, so a receiver with a certificate of a private CA can
    /// be reached without trusting that CA machine-wide. Throws `invalid_configuration` naming `setting` and the file
    /// at fault. Shut the client down when done (`HTTPClient.shutdown()`).
    ///
    /// `retryConnecting`: whether a connection that cannot be made (refused, a TLS handshake that fails) is tried
    /// again until `connectTimeout` within the one request; false for a caller that counts its own attempts and
    /// waits between them.
    public static func client(
        trustedCertificates: [String], setting: String, connectTimeout: TimeAmount, readTimeout: TimeAmount,
        retryConnecting: Bool = true
    ) throws(CodedError) -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        if !trustedCertificates.isEmpty {
            tls.trustRoots = .certificates(try certificates(trustedCertificates, setting: setting))
        }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(connect: connectTimeout, read: readTimeout))
        configuration.connectionPool.retryConnectionEstablishment = retryConnecting
        return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }

    /// The certificates in `paths`, read when the client is made, so an unreadable file stops the start rather than
    /// every request.
    static func certificates(_ paths: [String], setting: String) throws(CodedError) -> [NIOSSLCertificate] {
        var certificates: [NIOSSLCertificate] = []
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CodedError(.invalidConfiguration, "\(setting): cannot read trusted certificate '\(path)'")
            }
            let bytes = [UInt8](data)
            if let pem = try? NIOSSLCertificate.fromPEMBytes(bytes), !pem.isEmpty {
                certificates += pem
            } else if let der = try? NIOSSLCertificate(bytes: bytes, format: .der) {
                certificates.append(der)
            } else {
                throw CodedError(.invalidConfiguration, "\(setting): '\(path)' is not a certificate in PEM or DER")
            }
        }
        return certificates
    }
}
