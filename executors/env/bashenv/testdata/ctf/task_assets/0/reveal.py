import codecs
print(codecs.decode("cvpbPGS{e3i34y3q_0x}", "rot13"))
