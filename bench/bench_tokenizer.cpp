// placeholder until written below
int main() { return 0; }
