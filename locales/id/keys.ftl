# Pengelolaan kunci dan permintaan kunci, untuk admin.
keys-title = Kunci API
keys-new-key-for = Kunci baru untuk { $person } ({ $role })
keys-new-key-copy-now = Salin sekarang: kunci ini hanya ditampilkan kali ini saja.
keys-new-key-hash-only = Layanan hanya menyimpan hash-nya.
keys-new-key-label = Kunci baru
keys-copy = Salin
keys-revoked = Kunci telah dicabut.

keys-create-title = Buat kunci baru
keys-field-name = Nama (orang atau sistem)
keys-field-email = Email (opsional)
keys-field-person = Orang
keys-person-new = Orang baru
keys-person-same = Kunci lain untuk { $name } ({ $id })
keys-field-expires = Berlaku hingga (opsional)
keys-create = Buat kunci

keys-requests-title = Permintaan kunci
keys-requests-pending = { $n_text } menunggu
keys-no-requests = Belum ada permintaan. Staf dapat meminta kunci di { $link }.
keys-developer-center = pusat pengembang
keys-col-request = Permintaan
keys-col-person = Nama
keys-col-email = Email
keys-col-reason = Alasan
keys-col-state = Status
keys-col-decide = Keputusan
keys-decided-by = oleh { $person }
keys-withdraw-open = Tarik kembali…
keys-withdraw-confirm = Tarik kembali persetujuan ini? Kuncinya belum diambil dan tidak akan pernah bisa diambil.
keys-withdraw = Tarik kembali persetujuan
keys-approve-open = Setujui…
keys-deny-open = Tolak…
keys-comment = Komentar (opsional)
keys-approve = Setujui: izinkan pemohon mengambil kunci { $role }
keys-deny = Tolak permintaan
keys-deny-address-open = Tolak semua dari alamat ini…
keys-deny-address-confirm = Tolak setiap permintaan tertunda dari { $address } (dalam modul Anda)? Masing-masing dicatat sebagai keputusan Anda.
keys-deny-address = Tolak semua dari alamat ini
keys-from-address = dari { $address }

keys-all-title = Semua kunci
keys-col-key = Kunci
keys-col-created = Dibuat
keys-col-expires = Berlaku hingga
keys-col-status = Status
keys-col-revoke = Cabut
keys-never = tanpa batas
keys-revoke-open = Cabut…
keys-revoke-confirm = Cabut kunci milik { $person }? Kunci langsung berhenti berfungsi di semua sesi.
keys-revoke = Cabut kunci
keys-yours = kunci Anda

# Status kunci.
keys-status-live = aktif
keys-status-expired = kedaluwarsa
keys-status-revoked = dicabut

# Status permintaan kunci.
keys-request-pending = menunggu
keys-request-approved = disetujui
keys-request-denied = ditolak
keys-request-collected = sudah diambil
keys-request-expired = kedaluwarsa
keys-request-withdrawn = ditarik kembali
