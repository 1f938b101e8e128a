# Masuk dan penolakan sesi.
signin-lead = Masuk dengan Kunci API Anda untuk meninjau dan memutuskan impor di Human-Gate.
signin-key-label = Kunci API
signin-key-help = Kunci hanya dikirim sekali untuk memulai sesi; kunci tidak disimpan di peramban ini.
signin-no-key = Belum punya kunci?
signin-request-key = Minta kunci di pusat pengembang
signin-key-refused = Kunci tersebut tidak dikenal, sudah dicabut, atau kedaluwarsa.
# $class adalah jatahnya: uploads (unggahan) atau requests (permintaan).
signin-too-many-detail = kunci ini hanya boleh mengirim { $limit_text } { $class ->
    [uploads] unggahan
   *[requests] permintaan
} per menit; coba lagi dalam { $seconds_text } detik
# Signing in with the company's identity provider (src/console/oidc.rs).
signin-with = Masuk dengan { $provider }
signin-or-key = Atau masuk dengan kunci API
signin-oidc-refused = Masuk dengan akun perusahaan ditolak: { $why }
signin-key-off = Masuk dengan kunci API tidak diaktifkan di sini; masuklah dengan akun perusahaan Anda.
signin-oidc-continue = Berhasil masuk. Lanjutkan
